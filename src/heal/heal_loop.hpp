// The one heal loop. Every append path (a single row, a batch, many calls in
// one transaction) runs its insert through insert_until_covered.
#pragma once

#include <functional>
#include <vector>

#include "partitions/ensure_covering.hpp"
#include "registry/registry.hpp"

namespace partheal::heal {

// How the loop gets the partition covering an id made and committed, in a
// transaction that is not the caller's: the caller says (the worker's heal
// request, worker::create_covering_partition, or a Citus worker node's
// request to the coordinator, which says whether the key was given).
// Throws what stopped it.
using MakePartition =
    std::function<partitions::Ensured(Oid relid, int64 key, const partitions::KeySpec& spec)>;

// Runs insert() once every id has a partition. A missing partition is
// made (committed at once) and the insert runs again at once; the loop
// allows one heal for the boundary plus partheal.max_retries.
void insert_until_covered(const registry::ManagedTable& table, Relation parent,
                          const std::vector<int64>& ids, const MakePartition& make,
                          const std::function<void()>& insert);

// Who a heal is for: partheal_append and partheal_reserve, or a plain
// INSERT through the insert gate. Counted apart (partheal_stats.heals,
// insert_heals) and named in the PHL01 line.
enum class HealPath { kAppend, kReserve, kInsert };

// The table whose append's own INSERT the loop runs now (InvalidOid when
// none): a heal the insert gate makes under it for that table (a partition
// lost between the loop's check and the INSERT) is partheal_append's, and
// counted as such.
Oid append_insert_running();

// The same loop with nothing to insert: returns once every id has a
// partition (partheal_reserve, the insert gate), with the heals it made
// (0 when the catalog had them all). `refreshed`: the caller has just read
// the parent's partitions from the catalog (refresh_partitions), which the
// loop then does not do again before its first heal.
int cover(const registry::ManagedTable& table, Relation parent, const std::vector<int64>& ids,
          const MakePartition& make, HealPath path = HealPath::kAppend, bool refreshed = false);

// A 23514 raised by tuple routing at `parent` itself (kAtParent), told apart
// from CHECK and partition constraint violations by the ErrorData fields,
// never by message text. A miss at a sub-partitioned partition below it is
// not a heal's business: it stays PostgreSQL's own error. On a Citus table,
// a 23514 relayed from one of its shards carries no table field
// (kRelayed): the loop asks the catalog whether a partition is missing.
enum class Miss { kNone, kAtParent, kRelayed };
Miss routing_miss(const PgError& e, Oid parent);

}  // namespace partheal::heal
