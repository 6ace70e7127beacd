#include "pg/snapshots.hpp"

#include <algorithm>

#include "pg/boundary.hpp"

extern "C" {
#include "storage/proc.h"
#include "storage/procarray.h"
}

namespace partheal::pg {

std::vector<VirtualTransactionId> snapshot_holders() {
  std::vector<VirtualTransactionId> out;
  int n = 0;
  // limitXmin invalid: every snapshot, whatever its age; excludeXmin0: only
  // the transactions that hold one; this database only.
  VirtualTransactionId* vxids = guard([&] {
    return GetCurrentVirtualXIDs(InvalidTransactionId, true, false,
                                 PROC_IS_AUTOVACUUM | PROC_IN_VACUUM, &n);
  });
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(vxids[i]);
  guard([&] { pfree(vxids); });
  return out;
}

std::vector<VirtualTransactionId> still_holding(const std::vector<VirtualTransactionId>& holders) {
  if (holders.empty()) return {};
  std::vector<VirtualTransactionId> now = snapshot_holders();
  std::vector<VirtualTransactionId> out;
  for (const VirtualTransactionId& h : holders)
    if (std::any_of(now.begin(), now.end(), [&](const VirtualTransactionId& v) {
          return VirtualTransactionIdEquals(v, h);
        }))
      out.push_back(h);
  return out;
}

}  // namespace partheal::pg
