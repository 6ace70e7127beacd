#include "pg/lock_holders.hpp"

#include <algorithm>

#include "pg/boundary.hpp"

extern "C" {
#include "access/xlog.h"
#include "miscadmin.h"
}

namespace partheal::pg {

std::vector<VirtualTransactionId> lock_holders(Oid relid) {
  std::vector<VirtualTransactionId> out;
  // ACCESS EXCLUSIVE conflicts with every mode: its conflicts are every
  // holder. The array ends with an invalid id.
  VirtualTransactionId* vxids = guard([&] {
    LOCKTAG tag;
    SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
    return GetLockConflicts(&tag, AccessExclusiveLock, nullptr);
  });
  for (int i = 0; VirtualTransactionIdIsValid(vxids[i]); ++i) out.push_back(vxids[i]);
  // On a hot standby the array is PostgreSQL's own, kept for the next call.
  guard([&] {
    if (!RecoveryInProgress()) pfree(vxids);
  });
  return out;
}

std::vector<VirtualTransactionId> still_locking(Oid relid,
                                                const std::vector<VirtualTransactionId>& holders) {
  std::vector<VirtualTransactionId> out;
  if (holders.empty()) return out;
  const std::vector<VirtualTransactionId> now = lock_holders(relid);
  for (const VirtualTransactionId& h : holders)
    if (std::any_of(now.begin(), now.end(), [&](const VirtualTransactionId& n) {
          return VirtualTransactionIdEquals(h, n);
        }))
      out.push_back(h);
  return out;
}

}  // namespace partheal::pg
