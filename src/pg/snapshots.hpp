// The transactions of this database whose snapshots are older than a
// moment, and whether they still hold them: what a move of rows waits for,
// as CREATE INDEX CONCURRENTLY waits for the snapshots older than its
// index. A REPEATABLE READ or SERIALIZABLE transaction keeps its snapshot
// from its first statement to its end; a READ COMMITTED one takes a new one
// for each statement.
#pragma once

#include <vector>

#include "pg/postgres.hpp"

extern "C" {
#include "access/transam.h"
#include "storage/lock.h"
}

namespace partheal::pg {

struct SnapshotHolders {
  // The xmin of a snapshot taken at the moment: a snapshot with a newer one
  // was taken after it.
  TransactionId limit_xmin = InvalidTransactionId;
  std::vector<VirtualTransactionId> vxids;
};

// Inside a transaction: every transaction of this database, other than this
// process's and VACUUM's, that holds a snapshot as old as one taken now, or
// older.
SnapshotHolders snapshot_holders();

// Outside a transaction too: every transaction of this database, other
// than this process's and VACUUM's, that holds a snapshot taken before now
// (its xmin before the next transaction id to be given out).
SnapshotHolders snapshot_holders_now();

// Those of `holders` that still hold a snapshot that old: one that has
// ended, or that has taken only newer snapshots since, has let go.
SnapshotHolders still_holding(const SnapshotHolders& holders);

// `holders` without those in `waived`.
SnapshotHolders without(const SnapshotHolders& holders,
                        const std::vector<VirtualTransactionId>& waived);

}  // namespace partheal::pg
