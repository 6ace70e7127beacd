// The partitions a parent has now, read from its relcache entry: no SQL.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "partitions/key_space.hpp"
#include "pg/postgres.hpp"

extern "C" {
#include "partitioning/partdefs.h"
#include "utils/rel.h"
}

namespace partheal::partitions {

// Rebuilds this backend's view of the parent's partitions from the catalog
// as committed now. A relcache entry whose partition descriptor was being
// built while a concurrent ATTACH committed can keep the older set after it
// has consumed the ATTACH's invalidation, so accepting invalidations alone
// may leave it stale until the next DDL on the parent.
void refresh_partitions(Relation parent);

// A smallint, integer or bigint key value as int64; a timestamp or
// timestamptz as its microseconds, a date as its days (since 2000-01-01).
int64 key_to_int64(Datum d, Oid type);

// The limits of a smallint, integer or bigint key; false for any other type.
bool integer_key_limits(Oid type, int64* min, int64* max);

// The DEFAULT partition of an opened parent as its partition descriptor has
// it now; InvalidOid when it has none.
Oid default_partition(Relation parent);
// The same from the catalog (pg_partitioned_table.partdefid), for a parent
// partheal could not lock: committed state, no lock taken.
Oid default_partition_unlocked(Oid relid);

// The upper bound of the highest attached range partition, if any: read
// without copying the others.
std::optional<Bound> newest_upper(Relation parent);

// Ranges of the attached range partitions, in order. Throws PgError.
std::vector<Range> attached_ranges(Relation parent);

// The same with each partition's OID: retention judges a partition by its
// real bounds, whoever made it.
struct Partition {
  Oid relid;
  Range range;
};
std::vector<Partition> attached_partitions(Relation parent);

// The partition whose DETACH ... CONCURRENTLY stopped between its two
// transactions (a crash, a cancel, a lock timeout), marked
// pg_inherits.inhdetachpending and left out of the parent's routing, with
// the bounds it was attached with; none when no detach is pending
// (PostgreSQL allows one per parent). ALTER TABLE ... DETACH PARTITION ...
// FINALIZE completes it.
std::optional<Partition> pending_detach(Relation parent);

// True when an INSERT of this key value would find a partition (a DEFAULT
// partition takes everything). Cheap: a binary search over the bounds.
bool routes(Relation parent, int64 id);

// True when a partition other than a DEFAULT one holds this key value.
bool has_own_partition(Relation parent, int64 id);

// Where a partition descriptor routes a key: the one a statement's tuple
// routing was built from (the insert gate's), which may be older than the
// catalog. Plain reads of the descriptor: nothing here can fail.
struct DescriptorRoute {
  enum class To { kPartition, kDefault, kNowhere };
  To to = To::kNowhere;
  Range range;  // the partition's bounds, for kPartition
};
// A NULL key (`key_null`) has no range: only a DEFAULT takes it.
DescriptorRoute route_in_descriptor(PartitionDesc desc, Oid key_type, int64 key, bool key_null);

// The ids, in their order, that an INSERT would find no partition for; the
// bounds are read once for all of them.
std::vector<int64> unrouted(Relation parent, const std::vector<int64>& ids);

}  // namespace partheal::partitions
