// Where a registered table's retention stands: the horizon at or below
// which a partition's upper bound makes it due. The worker's retention
// drops by it, and a heal refuses (PH005) a partition it would drop at
// once, so both read it here.
#pragma once

#include <map>
#include <optional>

#include "partitions/key_space.hpp"
#include "pg/postgres.hpp"
#include "registry/registry.hpp"

namespace partheal::retention {

using registry::Config;
using registry::ManagedTable;

class RetentionHorizon {
 public:
  // The horizon of the partition with range r, nullopt to keep it. On the
  // Citus coordinator an id-keyed table's partitions in a worker node's
  // range (by their last id: the partition that holds a node's first ids
  // starts below its range) go by that node's position; a node that did
  // not answer keeps its range's. On a worker node, only its own range has
  // a horizon.
  std::optional<int64> of(const partitions::Range& r) const;
  // Whether any partition can be due.
  bool any() const { return own_.has_value() || !nodes_.empty(); }

 private:
  friend RetentionHorizon retention_horizon(const ManagedTable& table, Oid owner, bool wait,
                                            bool other_ranges);
  std::optional<int64> own_;      // the clock's, or this node's sequence position's
  std::map<int64, int64> nodes_;  // a worker node's range (its group) -> its horizon
  bool by_node_ = false;          // the Citus coordinator's id-keyed table
};

// For time, now() minus the retention on the zone's wall clock; for ids,
// the highest id the table's rows hold (as this snapshot sees them, read
// as `owner`) minus retention ids: none while the table holds no row or
// one of its partitions is locked by DDL. On Citus, each node's sequence
// position minus retention ids (none while a sequence is not drawn from;
// nor, unless `wait`, while it is locked).
// The worker nodes' positions only with `other_ranges` (a round trip to
// each): without, their ranges have no horizon.
RetentionHorizon retention_horizon(const ManagedTable& table, Oid owner, bool wait,
                                   bool other_ranges = true);

}  // namespace partheal::retention
