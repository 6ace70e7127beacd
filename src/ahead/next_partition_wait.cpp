#include "ahead/next_partition_wait.hpp"

#include <algorithm>
#include <vector>

#include "errors.hpp"
#include "partitions/attach_locks.hpp"
#include "partitions/catalog.hpp"
#include "partitions/key_space.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "worker/requests.hpp"

extern "C" {
#include "access/relation.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "access/xact.h"
#include "utils/acl.h"
#include "utils/inval.h"
}

namespace partheal::ahead {

namespace {

// What this backend last learned of one table, so that the draws after the
// mark cost two comparisons once the next partition is known to exist.
// Plain values of one table at a time (another table's draw replaces them):
// nothing to free when the table goes.
struct Seen {
  Oid relid = InvalidOid;
  int64 size = 0;
  int64 exists_through = PG_INT64_MIN;  // partitions up to this number route
  int64 given_up = PG_INT64_MIN;        // a wait for this partition ran out: none again
  // The start of the transaction found holding a lock the worker's ATTACH
  // needs: its later draws do not look again (the look reads pg_constraint).
  TimestampTz held_locks_in = 0;
};
Seen seen;

// Writers that may draw between one draw and its wait: the ids kept
// routable beyond a draw are never fewer, whatever the partition size.
constexpr int64 kDrawsInFlight = 256;
// ... but never more partitions than these for it: a table of tiny
// partitions gets some ahead, not hundreds (its writers wait more often).
// Fewer (4 of 10 ids) lost rows to 8 writers on 2 cores: one writer held
// a few ms between its statement's start and its draw let the others draw
// past what was kept.
constexpr int64 kMostPartitionsInFlight = 16;

bool known(const registry::ManagedTable& table, int64 last_n) {
  if (seen.relid != table.shape.relid || seen.size != table.config.partition_size) {
    seen = Seen{table.shape.relid, table.config.partition_size};
    return false;
  }
  if (seen.held_locks_in != 0 &&
      seen.held_locks_in == pg::guard([] { return GetCurrentTransactionStartTimestamp(); }))
    return true;
  return last_n <= std::max(seen.exists_through, seen.given_up);
}

// Errors raised inside PostgreSQL during the wait (it was cancelled,
// PostgreSQL's deadlock check chose this backend, memory ran out) end the
// statement: only a (sub)transaction's abort cleans up after them. What
// partheal raised itself after the wait was cleaned up (the worker's answer,
// relayed whatever its SQLSTATE, or its silence, PH002) is not this row's
// business.
bool must_pass_on(const PgError& e) {
  return e.fields().context_complete;
}

// Whether this backend may wait for the worker to attach a partition: it
// writes the table (INSERT and COPY hold ROW EXCLUSIVE on it; a SELECT of
// partheal_nextval does not), by a role that may insert (as a mark's
// request), and holds no lock the worker's ATTACH needs (LOCK TABLE, an
// earlier write to a table at the other end of a foreign key, DDL in the
// same transaction), which would make the worker wait for it: remembered
// for the rest of the transaction.
bool may_wait(Relation rel) {
  const Oid relid = RelationGetRelid(rel);
  bool writing = pg::guard([&] {
    return CheckRelationLockedByMe(rel, RowExclusiveLock, false) &&
           pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) == ACLCHECK_OK;
  });
  if (!writing) return false;
  // A Citus table's partition is distributed by the worker under Citus's
  // own locks too: its writers route on the shards; left to the poll.
  if (citus::Table::of(relid).in_metadata() || partitions::held_attach_lock_conflict(relid)) {
    seen.held_locks_in = pg::guard([] { return GetCurrentTransactionStartTimestamp(); });
    return false;
  }
  return true;
}

}  // namespace

void wait_for_next_partition(const registry::ManagedTable& table, int64 id) {
  const int64 size = table.config.partition_size;
  const int percent = table.config.mark_percent;
  const int64 increment = std::max<int64>(table.shape.sequence_increment, 1);
  if (size <= 0 || percent == 0 || table.registered_on_coordinator) return;
  const int64 n = partitions::partition_number(id, size);
  // The ids after this draw that must route before they are drawn: the rest
  // of the partition past its mark, and never fewer than the draws other
  // writers may make before they too wait.
  const int64 in_flight = size > kDrawsInFlight / kMostPartitionsInFlight
                              ? kDrawsInFlight
                              : size * kMostPartitionsInFlight;
  const int64 span = std::max(size - size * percent / 100, in_flight);
  if (id > PG_INT64_MAX - std::max(span, increment)) return;
  // The partitions the next draws fall into: every one up to id + span, or
  // with an increment that skips partitions, those of the draws themselves.
  std::vector<int64> needed;
  if (increment <= size) {
    for (int64 k = n + 1; k <= partitions::partition_number(id + span, size); ++k)
      needed.push_back(k);
  } else {
    for (int64 draw = id + increment; draw - id <= std::max(span, increment); draw += increment) {
      needed.push_back(partitions::partition_number(draw, size));
      if (draw > PG_INT64_MAX - increment) break;
    }
  }
  if (needed.empty() || known(table, needed.back())) return;
  const Oid relid = table.shape.relid;
  for (int64 k : needed) {
    if (k <= std::max(seen.exists_through, seen.given_up)) continue;
    int64 first = 0;
    if (!partitions::first_id_of(k, size, table.shape.key_max, &first)) return;
    Relation rel = pg::guard([&] { return try_relation_open(relid, AccessShareLock); });
    if (rel == nullptr) return;
    bool routes = partitions::routes(rel, first);
    bool waits = !routes && may_wait(rel);
    pg::guard([&] { relation_close(rel, NoLock); });
    if (!routes) {
      if (!waits) return;
      try {
        (void)worker::create_covering_partition(relid, first, table.key_spec());
        // Committed by the worker: this backend's next statements see it.
        pg::guard([] { AcceptInvalidationMessages(); });
      } catch (const PgError& e) {
        if (must_pass_on(e)) throw;
        // PH002, or the worker's own error (said in its log): the row of
        // this draw still lands, in the drawn id's partition, and the heal
        // or the worker's poll makes the next one.
        seen.given_up = k;
        continue;
      }
    }
    seen.exists_through = std::max(seen.exists_through, k);
  }
}

}  // namespace partheal::ahead
