// The transactions that hold a lock on a relation, and whether they still
// do: what a command that gave way to them waited for, so that it is tried
// again once they are gone rather than after a fixed back-off.
#pragma once

#include <vector>

#include "pg/postgres.hpp"

extern "C" {
#include "storage/lock.h"
}

namespace partheal::pg {

// Outside a transaction too: every transaction, other than this process's,
// that holds a lock on the relation (of this database) now that conflicts
// with `mode` (ACCESS EXCLUSIVE: any lock).
std::vector<VirtualTransactionId> lock_holders(Oid relid, LOCKMODE mode);

// Those of `holders` that still hold such a lock on it.
std::vector<VirtualTransactionId> still_locking(Oid relid, LOCKMODE mode,
                                                const std::vector<VirtualTransactionId>& holders);

}  // namespace partheal::pg
