// The drain's wait for older snapshots. A REPEATABLE READ or SERIALIZABLE
// transaction whose snapshot is older than a move, and that selects the
// window by its key after it, would see none of the moved rows: its plan
// prunes DEFAULT for the window (the catalog as committed now), and the
// window's copies are newer than its snapshot. So a window with rows to
// move is held back until the transactions holding such snapshots have let
// go of them, as CREATE INDEX CONCURRENTLY waits for the snapshots older
// than its index: outside any transaction, serving heal requests, bounded
// per poll round and by partheal.drain_snapshot_wait in all.
#pragma once

#include <string>
#include <vector>

#include "pg/postgres.hpp"
#include "pg/snapshots.hpp"
#include "worker/scheduler.hpp"

namespace partheal::drain {

// Per table.
struct SnapshotHold {
  TimestampTz since = 0;  // when the present hold began; 0: none
  bool said = false;      // the hold was said in the log
  // Transactions that outlasted partheal.drain_snapshot_wait once: the
  // drain moved past them, and does not wait for them again.
  std::vector<VirtualTransactionId> waived;
};

struct HoldOutcome {
  bool go = false;
  std::string note;  // what to log once the move has been made, if anything
  std::string detail;
};

// Whether the held window may move now, `holders` having been sampled in
// the transaction that held it back. Waits until `round_deadline` (and at
// least a moment), sampling again when they let go, so that the move
// follows a recent sample.
HoldOutcome wait_for_snapshots(worker::Schedule& s, TimestampTz round_deadline, SnapshotHold& hold,
                               pg::SnapshotHolders holders, Oid relid, const std::string& window);

// The hold ended without a move.
void hold_over(SnapshotHold& hold);

}  // namespace partheal::drain
