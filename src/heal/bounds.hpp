// The partitions a parent has now, read from its relcache entry: no SQL.
#pragma once

#include <vector>

#include "heal/partition_math.hpp"
#include "pg/postgres.hpp"

extern "C" {
#include "utils/rel.h"
}

namespace partheal::heal {

// Rebuilds this backend's view of the parent's partitions from the catalog
// as committed now. A relcache entry whose partition descriptor was being
// built while a concurrent ATTACH committed can keep the older set after it
// has consumed the ATTACH's invalidation, so accepting invalidations alone
// may leave it stale until the next DDL on the parent.
void refresh_partitions(Relation parent);

// A smallint, integer or bigint key value as int64.
int64 key_to_int64(Datum d, Oid type);

// Ranges of the attached range partitions, in order. Throws PgError.
std::vector<Range> attached_ranges(Relation parent);

// True when an INSERT of this key value would find a partition (a DEFAULT
// partition takes everything). Cheap: a binary search over the bounds.
bool routes(Relation parent, int64 id);

// True when a partition other than a DEFAULT one holds this key value.
bool has_own_partition(Relation parent, int64 id);

// The ids, in their order, that an INSERT would find no partition for; the
// bounds are read once for all of them.
std::vector<int64> unrouted(Relation parent, const std::vector<int64>& ids);

}  // namespace partheal::heal
