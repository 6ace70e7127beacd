#include "pg/snapshots.hpp"

#include <algorithm>

#include "pg/boundary.hpp"

extern "C" {
#include "access/transam.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/snapmgr.h"
}

namespace partheal::pg {

namespace {

bool listed(const std::vector<VirtualTransactionId>& list, const VirtualTransactionId& v) {
  return std::any_of(list.begin(), list.end(), [&](const VirtualTransactionId& w) {
    return VirtualTransactionIdEquals(v, w);
  });
}

// The transactions with a snapshot whose xmin is at or before limit_xmin:
// excludeXmin0 leaves out those that hold none, allDbs false the other
// databases, and the flags VACUUM and CREATE INDEX CONCURRENTLY (whose
// snapshots read no table of ours).
std::vector<VirtualTransactionId> older_than(TransactionId limit_xmin) {
  std::vector<VirtualTransactionId> out;
  int n = 0;
  VirtualTransactionId* vxids = guard([&] {
    return GetCurrentVirtualXIDs(limit_xmin, true, false,
                                 PROC_IS_AUTOVACUUM | PROC_IN_VACUUM | PROC_IN_SAFE_IC, &n);
  });
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(vxids[i]);
  guard([&] { pfree(vxids); });
  return out;
}

}  // namespace

SnapshotHolders snapshot_holders() {
  SnapshotHolders h;
  h.limit_xmin = guard([] { return GetLatestSnapshot()->xmin; });
  h.vxids = older_than(h.limit_xmin);
  return h;
}

SnapshotHolders snapshot_holders_now() {
  SnapshotHolders h;
  h.limit_xmin = guard([] {
    TransactionId next = XidFromFullTransactionId(ReadNextFullTransactionId());
    TransactionIdRetreat(next);
    return next;
  });
  h.vxids = older_than(h.limit_xmin);
  return h;
}

SnapshotHolders still_holding(const SnapshotHolders& holders) {
  SnapshotHolders out{holders.limit_xmin, {}};
  if (holders.vxids.empty()) return out;
  std::vector<VirtualTransactionId> now = older_than(holders.limit_xmin);
  for (const VirtualTransactionId& h : holders.vxids)
    if (listed(now, h)) out.vxids.push_back(h);
  return out;
}

SnapshotHolders without(const SnapshotHolders& holders,
                        const std::vector<VirtualTransactionId>& waived) {
  SnapshotHolders out{holders.limit_xmin, {}};
  for (const VirtualTransactionId& h : holders.vxids)
    if (!listed(waived, h)) out.vxids.push_back(h);
  return out;
}

}  // namespace partheal::pg
