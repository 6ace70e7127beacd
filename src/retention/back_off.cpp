#include "retention/back_off.hpp"

#include <iterator>
#include <map>
#include <utility>
#include <vector>

#include "pg/boundary.hpp"
#include "pg/lock_holders.hpp"
#include "pg/snapshots.hpp"

extern "C" {
#include "utils/timestamp.h"
}

namespace partheal::retention {

namespace {

constexpr long kFirstRetryMs = 1000;
constexpr long kMaxRetryMs = 60000;

// Early retries of a detach that gave way, one after another, that gave
// way again: then only the back-off. Transactions that each outlast the
// budget and overlap make every retry give way; each costs the worker a
// budget's wait, which heals and create-ahead would queue behind.
constexpr int kMostEarlyRetries = 2;

struct BackOff {
  TimestampTz retry_at = 0;
  long retry_ms = 0;
  // A DETACH CONCURRENTLY or FINALIZE that gave way (its wait ran out of
  // budget): what the FINALIZE that comes next waits for, as it was then.
  // Once none of them holds its snapshot or its lock, it is tried again at
  // once, whatever retry_at says: writers whose transactions overlap make
  // it give way often, and with one pending detach per table the table's
  // whole retention waits behind it.
  bool gave_way = false;
  pg::SnapshotHolders snapshots;                     // older snapshots
  std::vector<VirtualTransactionId> lockers;         // any lock on the window
  std::vector<VirtualTransactionId> parent_lockers;  // locks on the parent its own conflicts with
  int early_retries = 0;  // tried early, one after another, and gave way again
};

// Per (table, window): a window whose locks could not be had, or whose
// detach failed, retried from 1 s doubling to a minute; one that gave way,
// also as soon as what it gave way to is gone.
std::map<std::pair<Oid, Oid>, BackOff>& back_offs() {
  static auto* m = new std::map<std::pair<Oid, Oid>, BackOff>();
  return *m;
}

void back_off(BackOff& b) {
  b.retry_ms = b.retry_ms == 0 ? kFirstRetryMs : Min(b.retry_ms * 2, kMaxRetryMs);
  b.retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), b.retry_ms);
}

}  // namespace

bool waited_for(int sqlerrcode) {
  return sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE || sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED ||
         sqlerrcode == ERRCODE_QUERY_CANCELED;
}

// After a detach of the window stopped. A wait that ran out, or gave way
// to a heal request, notes what it waited for; an early try that gave way
// again keeps the back-off it had. Anything else backs off. A give-way to
// a heal is backed off alike: appenders that each wait for a heal hold
// the snapshots a FINALIZE waits for, so it gives way at every try while
// they run, and a pending detach tried every poll would keep the table's
// batches from their turn.
void stopped(Oid relid, Oid partition, bool waited, bool early) {
  BackOff& b = back_offs()[{relid, partition}];
  if (!(waited && early)) back_off(b);
  b.gave_way = waited;
  b.early_retries = waited && early ? b.early_retries + 1 : 0;
  b.snapshots = waited ? pg::snapshot_holders_now() : pg::SnapshotHolders{};
  b.lockers = waited ? pg::lock_holders(partition, AccessExclusiveLock)
                     : std::vector<VirtualTransactionId>{};
  b.parent_lockers = waited ? pg::lock_holders(relid, ShareUpdateExclusiveLock)
                            : std::vector<VirtualTransactionId>{};
}

bool backing_off(Oid relid, Oid partition) {
  auto it = back_offs().find({relid, partition});
  if (it == back_offs().end()) return false;
  BackOff& b = it->second;
  if (b.retry_at <= pg::guard([] { return GetCurrentTimestamp(); })) return false;
  if (!b.gave_way || b.early_retries >= kMostEarlyRetries) return true;
  b.snapshots = pg::still_holding(b.snapshots);
  b.lockers = pg::still_locking(partition, AccessExclusiveLock, b.lockers);
  b.parent_lockers = pg::still_locking(relid, ShareUpdateExclusiveLock, b.parent_lockers);
  return !b.snapshots.vxids.empty() || !b.lockers.empty() || !b.parent_lockers.empty();
}

bool early(Oid relid, Oid partition) {
  auto it = back_offs().find({relid, partition});
  return it != back_offs().end() && it->second.retry_at > GetCurrentTimestamp();
}

void back_off_for_a_minute(Oid relid, Oid partition) {
  BackOff& b = back_offs()[{relid, partition}];
  b.retry_ms = kMaxRetryMs;
  b.retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kMaxRetryMs);
}

void forget_back_off(Oid relid, Oid partition) {
  back_offs().erase({relid, partition});
}

void forget_back_offs_of_windows(Oid relid, const std::function<bool(Oid)>& present) {
  for (auto it = back_offs().lower_bound({relid, InvalidOid});
       it != back_offs().end() && it->first.first == relid;)
    it = present(it->first.second) ? std::next(it) : back_offs().erase(it);
}

void forget_back_offs_of_tables(const std::function<bool(Oid)>& retained) {
  for (auto it = back_offs().begin(); it != back_offs().end();)
    it = retained(it->first.first) ? std::next(it) : back_offs().erase(it);
}

}  // namespace partheal::retention
