#include "retention/horizon.hpp"

#include <utility>

#include "partitions/highest_key.hpp"
#include "partitions/time_zone.hpp"
#include "pg/own_sql.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/security.hpp"

extern "C" {
#include "utils/timestamp.h"
}

namespace partheal::retention {

std::optional<int64> RetentionHorizon::of(const partitions::Range& r) const {
  if (!by_node_ || r.upper.kind != partitions::Bound::Kind::kValue || r.upper.value <= 0)
    return own_;
  const int64 range = citus::node_range(r.upper.value - 1);
  if (range <= 0) return own_;
  auto it = nodes_.find(range);
  if (it == nodes_.end()) return std::nullopt;
  return it->second;
}

RetentionHorizon retention_horizon(const ManagedTable& table, Oid owner, bool wait,
                                   bool other_ranges) {
  RetentionHorizon h;
  const Config& c = table.config;
  if (!c.retains()) return h;
  if (c.by_time) {
    // The clock now, not the transaction's start: the horizon only moves
    // on, so a heal's check is the stricter of the two.
    const int64 now = pg::guard([] { return GetCurrentTimestamp(); });
    h.own_ = partitions::key_before_now(table.key_space(), c.time_zone.c_str(), c.retention_months,
                                        c.retention_days, c.retention_us, now);
    return h;
  }
  if (!table.shape.citus.in_metadata()) {
    // From the highest id the table holds, never the sequence's position: a
    // CACHE puts the position a cached range ahead of any row, and a role
    // with USAGE on the sequence could draw the owner's rows out of the
    // retention without writing one.
    partitions::HighestKey highest;
    pg::as_role(owner, [&] {
      highest = pg::with_own_sql(
          {}, [&] { return partitions::highest_key(table.shape.relid, table.shape.id_column); });
    });
    if (highest.known && highest.key && *highest.key >= PG_INT64_MIN + c.retention_ids)
      h.own_ = *highest.key - c.retention_ids;
    return h;
  }
  // On Citus each node draws from a range of its own, and its shards are
  // not this node's to scan: the horizon still counts from the sequences.
  citus::NodeHorizons nodes =
      citus::node_horizons(table.shape.sequence, owner, c.retention_ids, wait, other_ranges);
  h.own_ = nodes.own;
  h.nodes_ = std::move(nodes.ranges);
  h.by_node_ = nodes.by_range;
  return h;
}

}  // namespace partheal::retention
