// attach_window's lock waits: the budget they share, and the locks an attempt
// takes, polled for or queued.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "attach/locks.hpp"
#include "pg/boundary.hpp"
#include "pg/guc_level.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
}

namespace partheal::attach::locks {

namespace {

// All of an attempt's lock waits share one budget, started at its first
// lock, and the budget stays below deadlock_timeout. An application that
// begins to wait on a lock partheal holds does so after that first lock, so
// partheal's wait ends before the application's deadlock check can run:
// partheal is the one that gives way.
int budget_ms = 200;  // set at the start of each attach_window

// A queued lock request is cut into slices: PostgreSQL runs the deadlock
// check once per wait, deadlock_timeout into it, so a cycle that an
// application closes later in a long wait would be found by the
// application's check, not partheal's. Each slice is a new wait with a new
// check.
constexpr long kSliceMs = 25;

}  // namespace

int lock_budget_ms() {
  return budget_ms;
}

void set_lock_budget_ms(int ms) {
  budget_ms = ms;
}

long LockBudget::left() const {
  long elapsed =
      pg::guard([&] { return TimestampDifferenceMilliseconds(started_, GetCurrentTimestamp()); });
  return static_cast<long>(lock_budget_ms()) - elapsed;
}

void LockBudget::apply() const {
  pg::set_local("lock_timeout", std::to_string(std::max(1L, std::min(kSliceMs, left()))));
}

namespace {

// DEFAULT and, when it is partitioned, its partitions (ATTACH scans those
// too, and DETACH changes their constraint).
void add_default_tree(const Parent& p, LockSet& set) {
  if (!OidIsValid(p.default_relid)) return;
  List* tree = pg::guard([&] { return find_all_inheritors(p.default_relid, NoLock, nullptr); });
  ListCell* cell = nullptr;
  foreach (cell, tree) set.emplace_back(lfirst_oid(cell), AccessExclusiveLock);
}

// A lock no transaction holds in a conflicting mode, asked without taking
// it: a lock request (even one that does not wait) for ACCESS EXCLUSIVE
// assigns the subtransaction an XID, which a poll every 5 ms must not burn.
bool free_now(Oid relid, LOCKMODE mode) {
  return pg::guard([&] {
    LOCKTAG tag;
    SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
    int conflicts = 0;
    (void)GetLockConflicts(&tag, mode, &conflicts);
    return conflicts == 0;
  });
}

}  // namespace

// What an attach attempt locks, in order, parent first: the parent, the
// window's table, DEFAULT and its partitions.
LockSet attach_lock_set(const Parent& p, Oid table, bool locked) {
  LOCKMODE parent_mode = locked                        ? AccessExclusiveLock
                         : OidIsValid(p.default_relid) ? ExclusiveLock
                                                       : ShareUpdateExclusiveLock;
  LockSet set = {{p.relid, parent_mode}, {table, AccessExclusiveLock}};
  add_default_tree(p, set);
  return set;
}

// What a plain DETACH locks: the parent, the partition and DEFAULT, all
// ACCESS EXCLUSIVE.
LockSet detach_lock_set(const Parent& p, Oid partition) {
  LockSet set = {{p.relid, AccessExclusiveLock}, {partition, AccessExclusiveLock}};
  add_default_tree(p, set);
  return set;
}

// What every DETACH of a batch shares: the parent and DEFAULT, ACCESS
// EXCLUSIVE; the partitions are each the batch's own business.
LockSet parent_and_default_lock_set(const Parent& p) {
  LockSet set = {{p.relid, AccessExclusiveLock}};
  add_default_tree(p, set);
  return set;
}

// Takes an attempt's locks. Polling (`wait` false), all or none, without
// queueing: a request that waits in the lock manager puts every later
// writer and reader of the table behind it for as long as partheal waits.
// Queueing, each wait within what is left of the budget.
void lock_all(const Parent& p, const LockSet& set, bool wait, const LockBudget& budget,
              TimestampTz& held_since) {
  for (const auto& [relid, mode] : set) {
    if (wait) {
      budget.apply();
      pg::guard([&] { LockRelationOid(relid, mode); });
    } else if (!free_now(relid, mode) ||
               !pg::guard([&] { return ConditionalLockRelationOid(relid, mode); })) {
      throw LocksBusy{};
    }
    if (relid == p.relid && OidIsValid(p.default_relid))
      held_since = pg::guard([] { return GetCurrentTimestamp(); });
  }
}

// True when another backend waits for a lock this one holds: once rows have
// moved, polling would leave it waiting unseen by any deadlock check, since
// partheal itself never waits in the lock manager while it polls.
bool someone_waits_for_me() {
  return pg::spi::execute(
             "SELECT 1 FROM pg_catalog.pg_locks l WHERE NOT l.granted AND "
             "pg_catalog.pg_backend_pid() OPERATOR(pg_catalog.=) ANY "
             "(pg_catalog.pg_blocking_pids(l.pid)) LIMIT 1",
             SPI_OK_SELECT, {}, true) > 0;
}

bool is_lock_wait(const PgError& e) {
  return e.sqlerrcode() == ERRCODE_LOCK_NOT_AVAILABLE ||
         e.sqlerrcode() == ERRCODE_T_R_DEADLOCK_DETECTED;
}

}  // namespace partheal::attach::locks
