// attach_window's attempts: the plain ATTACH and the locked form, each tried
// in its own subtransaction, polling for its locks and then queueing.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "attach/reconcile_internal.hpp"
#include "partitions/child_table.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/own_sql.hpp"
#include "pg/error.hpp"
#include "pg/pause.hpp"
#include "pg/spi.hpp"
#include "pg/subxact.hpp"
#include "settings.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "nodes/pg_list.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

namespace partheal::attach::reconcile {

namespace {

// ATTACH's scan of DEFAULT names, in its error, the table it found the row
// in: DEFAULT itself, or a partition of a partitioned DEFAULT.
bool is_default_conflict(const PgError& e, const Parent& p) {
  const ErrorFields& f = e.fields();
  if (f.sqlerrcode != ERRCODE_CHECK_VIOLATION || !f.constraint_name.empty() ||
      !OidIsValid(p.default_relid))
    return false;
  if (f.table_name == p.default_name && f.schema_name == p.default_schema) return true;
  if (!p.default_is_partitioned) return false;
  const char* schema = f.schema_name.c_str();
  const char* table = f.table_name.c_str();
  return pg::guard([&] {
    Oid nsp = get_namespace_oid(schema, true);
    Oid relid = OidIsValid(nsp) ? get_relname_relid(table, nsp) : InvalidOid;
    return OidIsValid(relid) && list_member_oid(get_partition_ancestors(relid), p.default_relid);
  });
}

void back_off(int attempt) {
  pg::pause_ms(std::min(1000L, 50L << std::min(attempt - 1, 5)));
}

// One attempt, in its own subtransaction: locks that cannot be had or a
// DEFAULT conflict roll back only this attempt and its locks. `queue` is the
// last attempt's: it waits in the lock manager, within the budget, so that a
// steady stream of transactions cannot starve it.
Try attempt_once(const Parent& p, const Window& w, const Names& n, Oid table, bool locked,
                 bool queue, TimestampTz attempt_started, Result& r, TimestampTz& held_since) {
  pg::in_subtransaction([&] {
    LockBudget budget(attempt_started);
    // In the locked form the parent is ACCESS EXCLUSIVE: with rows moving,
    // a reader planned with the old partition set, then held at DEFAULT's
    // lock, would run after the commit with a new snapshot and find the
    // rows in neither place. Held at the parent, it plans after the commit.
    lock_all(p, attach_lock_set(p, table, locked), queue, budget, held_since);
    budget.apply();
    // Citus distributes a plain table as it is attached to a distributed
    // parent, copying its rows to the shards and leaving them on the
    // coordinator's disk too: partheal distributes it first and drops that
    // copy before the ATTACH (citus/attach.hpp says why not after).
    // (Citus's NOTICEs, whose HINT asks for that, are kept from the caller.)
    const bool distributes = p.citus.distributes_on_attach(table);
    std::string attach = partitions::attach_partition_sql(p.schema, p.name, n.table_name, n.range);
    auto attach_now = [&] {
      if (!distributes) {
        pg::spi::execute(attach, SPI_OK_UTILITY);
        return;
      }
      pg::with_own_sql({false, 0}, [&] {
        pg::set_local("client_min_messages", "warning");
        citus::distribute_for_attach(table, p.relid);
        pg::spi::execute(attach, SPI_OK_UTILITY);
      });
    };
    if (locked && !p.citus.in_metadata()) {
      // Writers wait for all of the locked form, and each look for the
      // tail's rows, as ATTACH's own check, reads all of DEFAULT: the ATTACH
      // is tried first, since the bulk move usually left no row of the
      // window behind, so writers wait for one read of DEFAULT, not two. If
      // rows came meanwhile, its scan stops at the first and the tail moves.
      // (Not on Citus: there DEFAULT's rows are on the worker nodes, whose
      // error does not name the DEFAULT partition.)
      try {
        pg::in_subtransaction(attach_now);
        return;
      } catch (const PgError& e) {
        if (!is_default_conflict(e, p)) throw;
      }
    }
    if (locked) {
      budget.apply();
      r.rows_moved += move_rows(p, w, n, -1, r);
      budget.apply();
    }
    attach_now();
  });
  return Try::kAttached;
}

// Adds the time since `since` to the parent's lock hold: every attempt that
// got the parent counts, the failed ones too, since writers waited for them.
void count_hold(TimestampTz since, Result& r) {
  if (since == 0) return;
  long ms =
      pg::guard([&] { return TimestampDifferenceMilliseconds(since, GetCurrentTimestamp()); });
  r.parent_held_ms += ms;
  r.parent_held_longest_ms = std::max(r.parent_held_longest_ms, ms);
}

}  // namespace

// Every attempt but the last polls for its locks, every few milliseconds for
// the budget, without ever waiting in the lock manager; the last one queues.
Try attempt(const Parent& p, const Window& w, const Names& n, Oid table, bool locked, Result& r) {
  std::string last = "the locks were taken whenever partheal looked";
  const int attempts = settings::attach_lock_attempts;
  bool skip_to_queue = false;
  for (int i = 0; i < attempts; ++i) {
    if (i > 0 && !skip_to_queue) back_off(i);
    r.attempts++;
    bool queue = i == attempts - 1 || skip_to_queue;
    TimestampTz polling_since = pg::guard([] { return GetCurrentTimestamp(); });
    for (int polls = 1;; ++polls) {
      int64 moved_before = r.rows_moved;
      int64 statements_before = r.move_statements;
      TimestampTz held_since = 0;
      try {
        Try t = attempt_once(p, w, n, table, locked, queue, polling_since, r, held_since);
        count_hold(held_since, r);
        return t;
      } catch (const LocksBusy&) {
        long polled = pg::guard(
            [&] { return TimestampDifferenceMilliseconds(polling_since, GetCurrentTimestamp()); });
        if (polled >= lock_budget_ms()) break;
        // Holding moved rows, partheal may be what the holder waits for:
        // queue at once, where the deadlock check can see the cycle.
        if (locked && polls % 10 == 0 && someone_waits_for_me()) {
          skip_to_queue = true;
          i = std::max(i, attempts - 2);
          break;
        }
        pg::pause_ms(5);
      } catch (const PgError& e) {
        count_hold(held_since, r);
        r.rows_moved = moved_before;
        r.move_statements = statements_before;
        if (is_default_conflict(e, p)) return Try::kDefaultConflict;
        if (locked && e.sqlerrcode() == ERRCODE_T_R_DEADLOCK_DETECTED)
          throw GiveUp{
              "it and another transaction were waiting for each other, and partheal gave way",
              "Try again when that transaction has ended."};
        if (!is_lock_wait(e)) throw;
        last = e.what();
        // A slice of the queued attempt ran out: queue again, with a new
        // deadlock check, while the budget lasts.
        bool spent = pg::guard([&] {
                       return TimestampDifferenceMilliseconds(polling_since, GetCurrentTimestamp());
                     }) >= lock_budget_ms();
        if (queue && e.sqlerrcode() == ERRCODE_LOCK_NOT_AVAILABLE && !spent) continue;
        break;
      }
    }
  }
  throw GiveUp{fmt::format("its locks could not be had in {} attempts of {} ms ({})",
                           settings::attach_lock_attempts, lock_budget_ms(), last),
               "Another transaction held the table or its DEFAULT partition; try again when it "
               "has ended."};
}

}  // namespace partheal::attach::reconcile
