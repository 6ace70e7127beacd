// detach_partition: retention's DETACH, with the attach's locks.
#include "retention/detach.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "attach/locks.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/error.hpp"
#include "pg/guc_level.hpp"
#include "pg/pause.hpp"
#include "pg/spi.hpp"
#include "pg/subxact.hpp"
#include "settings.hpp"

extern "C" {
#include "miscadmin.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

namespace partheal::retention {

using attach::Parent;

namespace {

// A foreign key to the parent has a constraint on each partition: DETACH
// would have to check every referencing table for rows of this one, and
// dropping it would take those rows' targets away.
bool referenced(Oid partition) {
  Oid types[] = {OIDOID};
  Datum values[] = {ObjectIdGetDatum(partition)};
  return pg::spi::execute(
             "SELECT 1 FROM pg_catalog.pg_constraint WHERE contype OPERATOR(pg_catalog.=) 'f' "
             "AND confrelid OPERATOR(pg_catalog.=) $1 LIMIT 1",
             SPI_OK_SELECT, {1, types, values, nullptr}, true) > 0;
}

std::string qualified(Oid relid) {
  return pg::guarded_text([&] {
    return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
                                      get_rel_name(relid));
  });
}

long since_ms(TimestampTz t) {
  return pg::guard([&] { return TimestampDifferenceMilliseconds(t, GetCurrentTimestamp()); });
}

// What the DETACH and the DROP lock besides the parent's set: the window's
// own partitions, and the tables its foreign keys point to (a DROP removes
// their action triggers, under ACCESS EXCLUSIVE), all polled for alike.
void add_window_tree(Oid partition, attach::locks::LockSet& set) {
  Oid types[] = {OIDOID};
  Datum values[] = {ObjectIdGetDatum(partition)};
  uint64 n = pg::spi::execute(
      "SELECT t.relid FROM pg_catalog.pg_partition_tree($1) t WHERE t.relid "
      "OPERATOR(pg_catalog.<>) $1 UNION SELECT c.confrelid FROM pg_catalog.pg_constraint c "
      "WHERE c.contype OPERATOR(pg_catalog.=) 'f' AND c.conrelid OPERATOR(pg_catalog.=) ANY "
      "(SELECT relid FROM pg_catalog.pg_partition_tree($1))",
      SPI_OK_SELECT, {1, types, values, nullptr}, true);
  std::vector<Oid> more;
  for (uint64 i = 0; i < n; ++i)
    if (std::optional<Datum> d = pg::spi::value(i, 1)) more.push_back(DatumGetObjectId(*d));
  for (Oid relid : more) {
    bool present = false;
    for (const auto& [have, mode] : set) present = present || have == relid;
    if (!present) set.emplace_back(relid, AccessExclusiveLock);
  }
}

// A view or rule on the window: its DROP would fail. After a plain DETACH
// that takes the detach back with it; after DETACH CONCURRENTLY, committed
// on its own, it would leave a plain table behind.
bool has_rules_on(Oid partition) {
  Oid types[] = {OIDOID};
  Datum values[] = {ObjectIdGetDatum(partition)};
  return pg::spi::execute(
             "SELECT 1 FROM pg_catalog.pg_depend WHERE classid OPERATOR(pg_catalog.=) "
             "'pg_catalog.pg_rewrite'::pg_catalog.regclass AND refclassid "
             "OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass AND refobjid "
             "OPERATOR(pg_catalog.=) $1 LIMIT 1",
             SPI_OK_SELECT, {1, types, values, nullptr}, true) > 0;
}

// DETACH CONCURRENTLY where PostgreSQL allows it and nothing else needs
// locks it would take later, in its second transaction, by queueing: no
// DEFAULT partition (55000 otherwise), a plain table with no partitions or
// foreign keys of its own, and no view on it.
// Citus refuses DETACH CONCURRENTLY of a distributed table's partition
// ("currently unsupported"): such a partition is detached under the polled
// locks.
bool detach_concurrently(const Parent& p, Oid partition, const attach::locks::LockSet& tree) {
  if (OidIsValid(p.default_relid) || !tree.empty() || p.citus.in_metadata()) return false;
  const char kind = pg::guard([&] { return get_rel_relkind(partition); });
  return kind == RELKIND_RELATION && !has_rules_on(partition);
}

// The locks a detach takes: CONCURRENTLY's, or the attach's discipline's
// with the window's own partitions.
attach::locks::LockSet detach_locks(const Parent& p, Oid partition,
                                    const attach::locks::LockSet& tree, bool concurrent) {
  // CONCURRENTLY's first transaction takes SHARE UPDATE EXCLUSIVE on both,
  // which no writer or reader conflicts with. Its commit takes the window
  // out of every later statement, those of transactions already open too:
  // one that wrote into it and writes again (a heal's rerun of ids drawn
  // before the window fell due) would find no partition. So the window is
  // polled for in SHARE ROW EXCLUSIVE, a moment with no transaction open
  // that wrote into it, and held so up to that commit; the parent only in
  // the command's own SHARE UPDATE EXCLUSIVE, so that no writer of the
  // table's other partitions waits for any of it. (Earlier builds polled
  // for SHARE ROW EXCLUSIVE on the parent, a moment with no writer's
  // transaction open anywhere in the table: under writers whose
  // transactions overlap there was none, and retention starved.) Holding
  // the command's own lock on the parent also means nothing (a CREATE
  // INDEX's SHARE) can come in between and close a cycle.
  attach::locks::LockSet set = concurrent
                                   ? attach::locks::LockSet{{p.relid, ShareUpdateExclusiveLock},
                                                            {partition, ShareRowExclusiveLock}}
                                   : attach::locks::detach_lock_set(p, partition);
  if (!concurrent) set.insert(set.end(), tree.begin(), tree.end());
  return set;
}

// What one attempt of a detach works with.
struct Detach {
  const Parent& p;
  Oid partition;
  const attach::locks::LockSet& set;
  bool concurrent;
  bool keep_table;
  int caller_lock_timeout_ms;
};

// Inside an attempt's subtransaction: the locks, then the DETACH (and
// DROP), or CONCURRENTLY's SQL for the caller to run at top level.
void locked_detach(const Detach& d, bool queue, TimestampTz polling_since, TimestampTz& held_since,
                   DetachResult& r) {
  attach::locks::LockBudget budget(polling_since);
  TimestampTz unused = 0;
  attach::locks::lock_all(d.p, d.set, queue, budget, unused);
  held_since = pg::guard([] { return GetCurrentTimestamp(); });
  // Named only now, under the locks taken by OID: a rename in
  // between could otherwise point the DDL at another table.
  const std::string table = qualified(d.partition);
  const std::string parent = qualified(d.p.relid);
  if (d.concurrent) {
    r.concurrent_sql =
        fmt::format("ALTER TABLE {} DETACH PARTITION {} CONCURRENTLY", parent, table);
    return;
  }
  budget.apply();
  // On Citus the DETACH and DROP run on every worker node too.
  d.p.citus.with_lock_bound_on_nodes(
      pg::guard([] { return LockTimeout; }), d.caller_lock_timeout_ms, [&] {
        pg::spi::execute(fmt::format("ALTER TABLE {} DETACH PARTITION {}", parent, table),
                         SPI_OK_UTILITY);
        if (!d.keep_table) pg::spi::execute(fmt::format("DROP TABLE {}", table), SPI_OK_UTILITY);
      });
}

}  // namespace

DetachResult detach_partition(const Parent& p, Oid partition, bool keep_table,
                              const std::function<bool()>& give_way) {
  using namespace attach::locks;
  DetachResult r;
  if (referenced(partition)) {
    r.outcome = DetachOutcome::kReferenced;
    r.reason = "foreign keys reference it";
    return r;
  }
  set_lock_budget_ms(settings::attach_lock_budget_ms());
  const int caller_lock_timeout_ms = pg::guard([] { return LockTimeout; });
  LockSet tree;
  add_window_tree(partition, tree);
  const bool concurrent = detach_concurrently(p, partition, tree);
  const attach::locks::LockSet set = detach_locks(p, partition, tree, concurrent);
  std::string last = "the locks were taken whenever partheal looked";
  const int attempts = settings::attach_lock_attempts;
  bool gave_way = false;
  for (int i = 0; i < attempts && !gave_way; ++i) {
    if (i > 0 && give_way && give_way()) {
      gave_way = true;
      last = "gave way to a heal request";
      break;
    }
    if (i > 0) pg::pause_ms(std::min(1000L, 50L << std::min(i - 1, 5)));
    r.attempts++;
    // Every attempt but the last polls; the last queues within the budget,
    // so that a steady stream of transactions cannot starve it.
    const bool queue = i == attempts - 1;
    const TimestampTz polling_since = pg::guard([] { return GetCurrentTimestamp(); });
    for (;;) {
      TimestampTz held_since = 0;
      try {
        pg::in_subtransaction([&] {
          locked_detach({p, partition, set, concurrent, keep_table, caller_lock_timeout_ms}, queue,
                        polling_since, held_since, r);
        });
        r.parent_held_ms = concurrent ? 0 : since_ms(held_since);
        r.held_since = held_since;
        r.outcome = concurrent   ? DetachOutcome::kConcurrent
                    : keep_table ? DetachOutcome::kDetached
                                 : DetachOutcome::kDropped;
        return r;
      } catch (const LocksBusy&) {
        if (since_ms(polling_since) >= lock_budget_ms()) break;
        if (give_way && give_way()) {
          gave_way = true;
          last = "gave way to a heal request";
          break;
        }
        pg::pause_ms(5);
      } catch (const PgError& e) {
        if (!is_lock_wait(e)) throw;
        last = e.what();
        if (queue && e.sqlerrcode() == ERRCODE_LOCK_NOT_AVAILABLE &&
            since_ms(polling_since) < lock_budget_ms())
          continue;
        break;
      }
    }
  }
  r.outcome = DetachOutcome::kBusy;
  r.reason = gave_way ? fmt::format("it {} after {} attempt{}", last, r.attempts,
                                    r.attempts == 1 ? "" : "s")
                      : fmt::format("its locks could not be had in {} attempts of {} ms ({})",
                                    attempts, lock_budget_ms(), last);
  r.gave_way = gave_way;
  return r;
}

namespace {
// A batch's lock waits, all of them: one slice of the attach's queued waits.
constexpr long kOneSliceMs = 25;
// A batch's hold of the parent, which writers wait out: no partition is
// begun after this much of it.
constexpr long kMostHoldMs = 15;
}  // namespace

bool detach_batchable(const Parent& p, Oid partition) {
  if (p.citus.in_metadata() || referenced(partition)) return false;
  const char kind = pg::guard([&] { return get_rel_relkind(partition); });
  if (kind != RELKIND_RELATION || has_rules_on(partition)) return false;
  attach::locks::LockSet tree;
  add_window_tree(partition, tree);
  return tree.empty();
}

BatchResult detach_batch(const Parent& p, const std::vector<Oid>& partitions, bool keep_table,
                         long poll_ms) {
  using namespace attach::locks;
  BatchResult r;
  // Every wait of the batch, the polling and the one queued request, comes
  // out of one slice: a heal request or a writer waits that long at most,
  // then the hold.
  set_lock_budget_ms(
      static_cast<int>(std::min<long>(kOneSliceMs, settings::attach_lock_budget_ms())));
  // The parent and DEFAULT, as every DETACH takes them, queued for if need
  // be; the partitions are asked for without waiting once those are held,
  // and one busy (an autovacuum of an old partition) is left out of the
  // batch: a wait for it would hold every writer of the table.
  const LockSet parent_set = parent_and_default_lock_set(p);
  const TimestampTz polling_since = pg::guard([] { return GetCurrentTimestamp(); });
  bool queue = false;
  for (;;) {
    try {
      TimestampTz held_since = 0;
      size_t detached = 0;
      pg::in_subtransaction([&] {
        LockBudget budget(polling_since);
        TimestampTz unused = 0;
        lock_all(p, parent_set, queue, budget, unused);
        held_since = pg::guard([] { return GetCurrentTimestamp(); });
        // What the DDL locks besides (a DROP's dependent objects) waits
        // what is left of the slice at most.
        budget.apply();
        const std::string parent = qualified(p.relid);
        // Oldest first, each named only now, under its lock taken by OID;
        // none begun after kMostHoldMs, the rest wait for the next batch.
        for (Oid partition : partitions) {
          if (!pg::guard(
                  [&] { return ConditionalLockRelationOid(partition, AccessExclusiveLock); }))
            continue;
          const std::string table = qualified(partition);
          pg::spi::execute(fmt::format("ALTER TABLE {} DETACH PARTITION {}", parent, table),
                           SPI_OK_UTILITY);
          if (!keep_table) pg::spi::execute(fmt::format("DROP TABLE {}", table), SPI_OK_UTILITY);
          r.done.push_back(partition);
          if (since_ms(held_since) >= kMostHoldMs) break;
        }
        detached = r.done.size();
      });
      // Only now: a failure inside took the whole batch back.
      r.detached = detached;
      r.parent_held_ms = since_ms(held_since);
      return r;
    } catch (const LocksBusy&) {
      r.done.clear();
      // Writers that follow each other leave no moment free: after
      // poll_ms, the request queues for what is left of the slice. A heal
      // request is not given way to before: under steady heals no batch
      // would ever be tried, and the table would fall further behind.
      queue = since_ms(polling_since) >= poll_ms;
      if (!queue) pg::pause_ms(2);
    } catch (const PgError& e) {
      // Anything else (an event trigger that refuses a DROP) is the
      // caller's to hear: the subtransaction took the batch back.
      r.done.clear();
      r.detached = 0;
      if (!is_lock_wait(e)) r.error = e.what();
      return r;
    }
  }
}

namespace {

// Waits for a lock within the lock budget: what is left to lock here is a
// detached or detach-pending table, out of the parent's routing, that only
// statements naming it still use.
void lock_within_budget(Oid relid, LOCKMODE mode, pg::CancelWhen::Wanted give_way = nullptr,
                        bool* gave_way = nullptr) {
  pg::set_local("lock_timeout", std::to_string(std::max(1, settings::attach_lock_budget_ms())));
  if (give_way == nullptr) {
    pg::guard([&] { LockRelationOid(relid, mode); });
    return;
  }
  pg::CancelWhen cancel(give_way, gave_way);
  pg::guard([&] { LockRelationOid(relid, mode); });
}

}  // namespace

std::string prepare_finalize(const Parent& p, Oid partition, pg::CancelWhen::Wanted give_way,
                             bool* gave_way) {
  // FINALIZE's own locks, taken by OID first so that the names are read
  // under them; FINALIZE then waits, within the same bounds, for the
  // snapshots older than its own.
  lock_within_budget(p.relid, ShareUpdateExclusiveLock, give_way, gave_way);
  lock_within_budget(partition, AccessExclusiveLock, give_way, gave_way);
  return fmt::format("ALTER TABLE {} DETACH PARTITION {} FINALIZE", qualified(p.relid),
                     qualified(partition));
}

bool detach_running_elsewhere() {
  return pg::spi::execute(
             "SELECT 1 FROM pg_catalog.pg_stat_activity WHERE pid OPERATOR(pg_catalog.<>) "
             "pg_catalog.pg_backend_pid() AND datname OPERATOR(pg_catalog.=) "
             "pg_catalog.current_database() AND state OPERATOR(pg_catalog.=) 'active' AND "
             "query OPERATOR(pg_catalog.~*) 'detach[[:space:]]+partition' LIMIT 1",
             SPI_OK_SELECT, {}, true) > 0;
}

void drop_detached(Oid table) {
  lock_within_budget(table, AccessExclusiveLock);
  const bool present = pg::guard([&] { return get_rel_name(table) != nullptr; });
  if (!present) return;
  pg::spi::execute(fmt::format("DROP TABLE {}", qualified(table)), SPI_OK_UTILITY);
}

}  // namespace partheal::retention
