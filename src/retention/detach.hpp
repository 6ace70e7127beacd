// Detaching a partition under live writers, with the attach's lock
// discipline: the parent, the partition and DEFAULT are taken ACCESS
// EXCLUSIVE by polling every few milliseconds, never waiting in the lock
// manager, for partheal.attach_lock_timeout per attempt; only the last
// attempt queues, in slices, within the same budget. A writer waits behind
// partheal for at most that budget, and a long reader of the table makes
// partheal give way, not the writers queue behind it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "attach/window.hpp"
#include "pg/cancel_when.hpp"

namespace partheal::retention {

using attach::Parent;

enum class DetachOutcome {
  kDropped,     // detached and dropped
  kDetached,    // detached and kept as a plain table (keep_table)
  kReferenced,  // foreign keys reference it: left attached
  kBusy,        // its locks could not be had: nothing changed
  kConcurrent,  // ready for DETACH CONCURRENTLY: its locks are held, run concurrent_sql
};

struct DetachResult {
  DetachOutcome outcome = DetachOutcome::kBusy;
  int attempts = 0;
  long parent_held_ms = 0;     // up to the end of the call; the hold lasts until commit
  std::string reason;          // why it was left attached
  std::string concurrent_sql;  // kConcurrent: ALTER TABLE ... DETACH PARTITION ... CONCURRENTLY
  TimestampTz held_since = 0;  // kConcurrent: when the parent's lock was had
  bool gave_way = false;       // kBusy: ended by give_way, to be tried again at once
};

// Detaches `partition` from the parent, and drops it unless keep_table, in
// the caller's transaction (a failed DROP, say a view on it, takes the
// detach back with it). Needs SPI connected and partheal's GUC level
// entered, as the parent's owner.
//
// Where PostgreSQL allows DETACH ... CONCURRENTLY (no DEFAULT partition) and
// nothing makes it a worse choice (the window is partitioned itself, has
// foreign keys to other tables, or a view on it would make the DROP that
// follows in a later transaction fail), nothing is detached here: the
// result is kConcurrent, with the locks that command takes (SHARE UPDATE
// EXCLUSIVE on the parent and the window) polled for and held, and the
// statement to run through pg::run_top_level in this same transaction.
// Neither readers nor writers of the parent wait for that command; its
// second transaction waits, within lock_timeout, for the transactions that
// still use the parent.
//
// `give_way`, asked between polls, ends the attempt (kBusy) when it says
// so: the worker's heal requests must not wait behind retention's polling.
DetachResult detach_partition(const Parent& parent, Oid partition, bool keep_table,
                              const std::function<bool()>& give_way = {});

// Retention behind its horizon (several due partitions): `partitions`, each
// one detach_batchable allows, detached (and dropped unless keep_table)
// together in the caller's transaction, under one hold of the parent, the
// partitions and DEFAULT in ACCESS EXCLUSIVE. Polled for `poll_ms`, then
// queued for what is left of one lock slice (25 ms, or
// partheal.attach_lock_timeout if less): a writer waits that long behind
// the request at most, then for the hold: a DETACH and a DROP per
// partition, oldest first, none begun once the hold has lasted 15 ms, a
// partition another transaction holds (an autovacuum) left out. The hold
// lasts to the caller's commit, which flushes WAL and unlinks the files.
// When the locks cannot be had in that time, or a DETACH or DROP fails
// otherwise, the result says so and nothing changed: retention goes on one partition at a time, by
// DETACH CONCURRENTLY where it can. Needs what detach_partition needs.
struct BatchResult {
  size_t detached = 0;      // how many of `partitions` were detached (and dropped)
  std::vector<Oid> done;    // which, oldest first: a busy one is left out
  long parent_held_ms = 0;  // up to the end of the call; the hold lasts until commit
  std::string error;        // a failure other than a lock wait, nothing changed
};
BatchResult detach_batch(const Parent& parent, const std::vector<Oid>& partitions, bool keep_table,
                         long poll_ms);

// Whether `partition` may go in a batch: a plain table, not foreign or
// partitioned, with no foreign key to or from it and no view on it, whose
// DETACH and DROP can fail only on a lock. Needs SPI connected.
bool detach_batchable(const Parent& parent, Oid partition);

// Readies the completion of a DETACH ... CONCURRENTLY that stopped between
// its transactions: takes its locks, each wait within the attach's lock
// budget, and returns ALTER TABLE ... DETACH PARTITION ... FINALIZE, to run
// through pg::run_top_level in this same transaction (which bounds its wait
// for older snapshots). Needs what detach_partition needs.
//
// Its waits give way when `give_way` says so (pg::CancelWhen: a heal request
// the worker should serve), with 57014, and set `gave_way`.
std::string prepare_finalize(const Parent& parent, Oid partition,
                             pg::CancelWhen::Wanted give_way = nullptr, bool* gave_way = nullptr);

// True while another session of this database runs a DETACH PARTITION: a
// DETACH CONCURRENTLY waiting in its second transaction holds no lock, and
// a FINALIZE of its detach would make it fail.
bool detach_running_elsewhere();

// Drops a table that DETACH ... CONCURRENTLY or FINALIZE detached, in the
// same transaction, its lock wait within the attach's lock budget. Needs
// what detach_partition needs.
void drop_detached(Oid table);

}  // namespace partheal::retention
