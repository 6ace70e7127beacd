// What retention remembers of a table between rounds: the scheduler's memo
// of it, freed when the table's registration goes. The back-offs
// themselves are the scheduler's, in shared memory (worker/back_offs.hpp);
// here is only what a window gave way to, for an early retry.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pg/postgres.hpp"
#include "pg/snapshots.hpp"
#include "worker/scheduler.hpp"

extern "C" {
#include "datatype/timestamp.h"
#include "storage/lock.h"
}

namespace partheal::retention {

// A DETACH CONCURRENTLY or FINALIZE that gave way (its wait ran out of
// budget): what the FINALIZE that comes next waits for, as it was then.
// Once none of them holds its snapshot or its lock, it is tried again at
// once, whatever its back-off says: writers whose transactions overlap
// make it give way often, and with one pending detach per table the
// table's whole retention waits behind it.
struct GaveWay {
  bool gave_way = false;
  pg::SnapshotHolders snapshots;                     // older snapshots
  std::vector<VirtualTransactionId> lockers;         // any lock on the window
  std::vector<VirtualTransactionId> parent_lockers;  // locks on the parent its own conflicts with
  int early_retries = 0;  // tried early, one after another, and gave way again
};

struct TableWatch : worker::Memo {
  std::map<Oid, GaveWay> gave_way;  // per window
  // Windows left attached for as long as they are referenced or foreign,
  // said once and looked at again once a minute.
  std::set<Oid> said_left;
  std::string last_error;  // logged when it changes
  // Windows whose DROP failed after their detach had committed, or in the
  // same transaction as their FINALIZE: completed next without the DROP,
  // and kept as plain tables, so that the table's retention goes on.
  std::map<Oid, std::string> drop_failures;
  // Batches (retention/batches.hpp): since when they have failed for their
  // locks, one after the other; and not tried before refused_until, after
  // one failed otherwise.
  std::optional<TimestampTz> batches_failing_since;
  TimestampTz batches_refused_until = 0;
};

}  // namespace partheal::retention
