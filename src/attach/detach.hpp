// Detaching a partition under live writers, with the attach's lock
// discipline: the parent, the partition and DEFAULT are taken ACCESS
// EXCLUSIVE by polling every few milliseconds, never waiting in the lock
// manager, for partheal.attach_lock_timeout per attempt; only the last
// attempt queues, in slices, within the same budget. A writer waits behind
// partheal for at most that budget, and a long reader of the table makes
// partheal give way, not the writers queue behind it.
#pragma once

#include <string>

#include "attach/window.hpp"

namespace partheal::attach {

enum class DetachOutcome {
  kDropped,     // detached and dropped
  kDetached,    // detached and kept as a plain table (keep_table)
  kReferenced,  // foreign keys reference it: left attached
  kBusy,        // its locks could not be had: nothing changed
};

struct DetachResult {
  DetachOutcome outcome = DetachOutcome::kBusy;
  int attempts = 0;
  long parent_held_ms = 0;  // up to the end of the call; the hold lasts until commit
  std::string reason;       // why it was left attached
};

// Detaches `partition` from the parent, and drops it unless keep_table, in
// the caller's transaction (a failed DROP, say a view on it, takes the
// detach back with it). Needs SPI connected and partheal's GUC level
// entered, as the parent's owner.
DetachResult detach_partition(const Parent& parent, Oid partition, bool keep_table);

}  // namespace partheal::attach
