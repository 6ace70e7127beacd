// One model of a partitioned parent: who it is, its key's type, its
// DEFAULT partition and its place in a Citus cluster (read_parent), and its
// windows (read_windows), each read once a step from an opened parent. The
// heal's DDL (ensure_covering), create-ahead through it, the attach
// (attach::Parent adds the key's operators and the columns a move copies),
// the drain and retention read a parent here; the DEFAULT partition is
// looked up in one place (default_partition, catalog.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "citus/citus.hpp"
#include "partitions/catalog.hpp"
#include "pg/postgres.hpp"

extern "C" {
#include "utils/relcache.h"
}

namespace partheal::partitions {

struct Parent {
  Oid relid = InvalidOid;
  std::string schema;
  std::string name;
  Oid namespace_oid = InvalidOid;
  Oid owner = InvalidOid;
  Oid key_type = InvalidOid;  // the one RANGE key column's; InvalidOid when not one
  // The DEFAULT partition, as the partition descriptor has it now.
  Oid default_relid = InvalidOid;  // none when invalid
  std::string default_schema;
  std::string default_name;
  std::string default_sql;  // schema.name, quoted
  bool default_is_foreign = false;
  bool default_is_partitioned = false;
  // The parent as the Citus cluster sees it: plain without Citus. (Making
  // a table distributed invalidates its relcache entry, and so a model
  // kept with it, as the registration's shape is.)
  citus::Table citus;
};

// The parent as its relcache entry has it now; the caller holds a lock on
// it. No check of whether partheal may manage it: that is the
// registration's, once, or the attach's.
Parent read_parent(Relation rel);

// The parent's windows as one step reads them (catalog.hpp): the attached
// range partitions in key order, and the one whose DETACH ... CONCURRENTLY
// was started and not finished, out of the routing but keeping its bounds
// until FINALIZE. The heal's DDL and retention read them here.
struct Windows {
  std::vector<Partition> attached;
  std::optional<Partition> pending;
  // What a new partition must not overlap: every attached range, and the
  // pending one's.
  std::vector<Range> taken() const;
};
Windows read_windows(Relation rel);

// The key's own limits, for an integer or time key (times: finite, as
// int64). Throws 0A000 when the parent is not partitioned by RANGE on one
// integer or time column (it was, when it was registered; a registration
// can outlive that only through a DROP and re-CREATE under the same OID,
// which cannot happen).
void key_limits(const Parent& parent, int64* min, int64* max);

}  // namespace partheal::partitions
