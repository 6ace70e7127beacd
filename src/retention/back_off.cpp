#include "retention/back_off.hpp"

#include <algorithm>
#include <iterator>

#include "pg/boundary.hpp"
#include "pg/lock_holders.hpp"
#include "pg/snapshots.hpp"

namespace partheal::retention {

namespace {

// Early retries of a detach that gave way, one after another, that gave
// way again: then only the back-off. Transactions that each outlast the
// budget and overlap make every retry give way; each costs the worker a
// budget's wait, which heals and create-ahead would queue behind.
constexpr int kMostEarlyRetries = 2;

}  // namespace

bool waited_for(int sqlerrcode) {
  return sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE || sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED ||
         sqlerrcode == ERRCODE_QUERY_CANCELED;
}

// A wait that ran out, or gave way to a heal request, notes what it waited
// for; an early try that gave way again keeps the back-off it had. Anything
// else backs off. A give-way to a heal is backed off alike: appenders that
// each wait for a heal hold the snapshots a FINALIZE waits for, so it gives
// way at every try while they run, and a pending detach tried every round
// would keep the table's batches from their turn.
void BackOffs::stopped(Oid partition, bool waited, bool early) {
  if (!(waited && early)) s.back_off(relid, static_cast<int64>(partition));
  GaveWay& b = watch.gave_way[partition];
  b.gave_way = waited;
  b.early_retries = waited && early ? b.early_retries + 1 : 0;
  b.snapshots = waited ? pg::snapshot_holders_now() : pg::SnapshotHolders{};
  b.lockers = waited ? pg::lock_holders(partition, AccessExclusiveLock)
                     : std::vector<VirtualTransactionId>{};
  b.parent_lockers = waited ? pg::lock_holders(relid, ShareUpdateExclusiveLock)
                            : std::vector<VirtualTransactionId>{};
}

bool BackOffs::backing_off(Oid partition) {
  if (!s.backing_off(relid, static_cast<int64>(partition))) return false;
  auto it = watch.gave_way.find(partition);
  if (it == watch.gave_way.end()) return true;
  GaveWay& b = it->second;
  if (!b.gave_way || b.early_retries >= kMostEarlyRetries) return true;
  b.snapshots = pg::still_holding(b.snapshots);
  b.lockers = pg::still_locking(partition, AccessExclusiveLock, b.lockers);
  b.parent_lockers = pg::still_locking(relid, ShareUpdateExclusiveLock, b.parent_lockers);
  return !b.snapshots.vxids.empty() || !b.lockers.empty() || !b.parent_lockers.empty();
}

bool BackOffs::early(Oid partition) const {
  return s.backing_off(relid, static_cast<int64>(partition));
}

void BackOffs::for_a_minute(Oid partition) {
  s.back_off(relid, static_cast<int64>(partition), worker::back_offs::kCapMs);
}

void BackOffs::forget(Oid partition) {
  s.clear(relid, static_cast<int64>(partition));
  watch.gave_way.erase(partition);
}

void BackOffs::keep_only(const std::vector<Oid>& present) {
  std::vector<int64> windows;
  for (Oid partition : present) windows.push_back(static_cast<int64>(partition));
  s.keep_windows(relid, windows);
  for (auto it = watch.gave_way.begin(); it != watch.gave_way.end();)
    it = std::find(present.begin(), present.end(), it->first) != present.end()
             ? std::next(it)
             : watch.gave_way.erase(it);
}

}  // namespace partheal::retention
