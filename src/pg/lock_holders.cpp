#include "pg/lock_holders.hpp"

#include <algorithm>

#include "pg/boundary.hpp"

extern "C" {
#include "miscadmin.h"
}

namespace partheal::pg {

std::vector<VirtualTransactionId> lock_holders(Oid relid, LOCKMODE mode) {
  std::vector<VirtualTransactionId> out;
  // The array ends with an invalid id. It is palloc'd in every process but
  // the startup process.
  VirtualTransactionId* vxids = guard([&] {
    LOCKTAG tag;
    SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
    return GetLockConflicts(&tag, mode, nullptr);
  });
  for (int i = 0; VirtualTransactionIdIsValid(vxids[i]); ++i) out.push_back(vxids[i]);
  guard([&] { pfree(vxids); });
  return out;
}

std::vector<VirtualTransactionId> still_locking(Oid relid, LOCKMODE mode,
                                                const std::vector<VirtualTransactionId>& holders) {
  std::vector<VirtualTransactionId> out;
  if (holders.empty()) return out;
  const std::vector<VirtualTransactionId> now = lock_holders(relid, mode);
  for (const VirtualTransactionId& h : holders)
    if (std::any_of(now.begin(), now.end(), [&](const VirtualTransactionId& n) {
          return VirtualTransactionIdEquals(h, n);
        }))
      out.push_back(h);
  return out;
}

}  // namespace partheal::pg
