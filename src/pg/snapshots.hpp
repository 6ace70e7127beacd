// The transactions of this database that hold a snapshot, and whether they
// still do: what a move of rows waits for, as CREATE INDEX CONCURRENTLY
// waits for the snapshots older than its index. A REPEATABLE READ or
// SERIALIZABLE transaction keeps its snapshot from its first statement to
// its end; a READ COMMITTED one only while a statement runs.
#pragma once

#include <vector>

#include "pg/postgres.hpp"

extern "C" {
#include "storage/lock.h"
}

namespace partheal::pg {

// Every transaction of this database, other than this process's and
// VACUUM's, that holds a snapshot now.
std::vector<VirtualTransactionId> snapshot_holders();

// Those of `holders` that still run and still hold a snapshot: one that has
// ended, or a READ COMMITTED one between two statements, has let go of the
// snapshot it held.
std::vector<VirtualTransactionId> still_holding(const std::vector<VirtualTransactionId>& holders);

}  // namespace partheal::pg
