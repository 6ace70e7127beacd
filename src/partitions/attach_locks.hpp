// The locks ATTACH PARTITION takes beyond the new table, and whether this
// transaction holds one that conflicts with them. Partitions are attached by
// the worker, in its own transaction: a backend that holds such a lock and
// waits for the worker would wait for itself. The heal refuses (PH004);
// partheal_nextval's wait for the partitions ahead does not wait at all.
#pragma once

#include <optional>

#include "pg/postgres.hpp"

extern "C" {
#include "storage/lockdefs.h"
}

namespace partheal::partitions {

struct HeldAttachLock {
  Oid held_on = InvalidOid;  // the parent, or a table at the other end of one of its foreign keys
  LOCKMODE held = NoLock;    // the strongest conflicting mode this transaction holds on it
  LOCKMODE needed = NoLock;  // what ATTACH takes on it
};

// ATTACH takes SHARE UPDATE EXCLUSIVE on the parent and, for each foreign
// key the parent has or is the target of, SHARE ROW EXCLUSIVE on the table
// at the key's other end (to clone the key): the first of these that this
// transaction holds a conflicting lock on, or none. Reads pg_constraint
// (a scan): call it when a partition is about to be asked for, not per row.
std::optional<HeldAttachLock> held_attach_lock_conflict(Oid parent);

}  // namespace partheal::partitions
