// The shared memory between backends, the launcher and the per-database
// workers: one heal request slot per backend (a backend waits for one
// partition at a time), a queue of create-ahead attempts, and the databases
// the launcher follows, each with its worker's handle.
#pragma once

#include "pg/compat.hpp"
#include "pg/postgres.hpp"

extern "C" {
#include "storage/condition_variable.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
}

namespace partheal::worker {

// kTaken: the worker took the request and is starting its transaction;
// kRunning: it holds the request's lock (request_lock_tag), which the asker
// waits on, so that PostgreSQL's deadlock detector sees the asker waiting
// for the worker.
enum class RequestState : uint32 { kFree, kPending, kTaken, kRunning, kDone };

// The lock the worker holds, ExclusiveLock for its whole transaction, while
// it serves the request in slot `slot` of generation `generation`, and that
// the asker waits on in ShareLock. pg_locks shows it as an advisory lock
// with objsubid 20562 ("PR"), classid the slot and objid the generation's
// low 32 bits.
constexpr uint16 kRequestLockClass = 0x5052;
void request_lock_tag(LOCKTAG* tag, Oid dboid, int slot, uint64 generation);

constexpr size_t kTextSize = 512;

// Plain data, copied out of shared memory under the request's spinlock.
struct Answer {
  int sqlerrcode = 0;     // 0: the partition exists now, or gave_way
  bool gave_way = false;  // create-ahead found the table locked: try again later
  char message[kTextSize] = {};
  char detail[kTextSize] = {};
  char hint[kTextSize] = {};
  char partition[NAMEDATALEN] = {};
  char range[128] = {};
};

struct Request {
  slock_t mutex;
  uint64 generation;  // bumped per request, so a late answer to an abandoned one is dropped
  RequestState state;
  Oid dboid;
  Oid relid;
  int64 id;
  int64 partition_size;
  Answer answer;
  ConditionVariable answered;
};

// A BackgroundWorkerHandle kept by value in shared memory, so that the
// launcher and a backend running database DDL act on the same worker through
// TerminateBackgroundWorker and GetBackgroundWorkerPid, never through a bare
// pid. Its layout is PostgreSQL's private one (see pg/compat.hpp).
using WorkerHandle = pg::compat::BackgroundWorkerHandleCopy;

constexpr int kMaxPausers = 8;

// One database the launcher knows, with or without a worker now.
struct DatabaseEntry {
  Oid dboid;               // InvalidOid: a free entry
  bool wanted;             // a backend asked for a worker (a heal, a registration)
  bool no_extension;       // its worker found no partheal: not started again until wanted
  bool no_slot;            // the last start found every background worker slot taken
  TimestampTz no_slot_at;  // when
  bool unrunnable;         // a template, or closed to connections: no worker, PH003 at once
  bool has_handle;         // a worker was registered and may be running
  WorkerHandle handle;     // valid with has_handle
  PGPROC* proc;            // set by the running worker: its latch
  // Backends running database DDL on it: no worker until all are done.
  pid_t paused_by[kMaxPausers];
  bool stopped_on_purpose;  // by a pause or the launcher: no failure to back off from
  // Paused while its worker ran: its slot is kept for it, and no other
  // database's worker starts until it has its own back.
  bool reserved;
  int quick_exits;  // workers in a row that failed soon after starting
  TimestampTz started_at;
  TimestampTz not_before;  // the next start waits until then
  TimestampTz probed_at;   // when a worker last looked for partheal here
};

// A create-ahead attempt waiting for the worker, with its retry state.
struct AheadSlot {
  bool used;
  Oid dboid;
  Oid relid;
  int64 partition;
  int64 partition_size;  // what `partition` was numbered under: a new size drops the slot
  int attempts;
  TimestampTz not_before;
  TimestampTz busy_since;  // giving way to other sessions' locks since; 0: not
};

constexpr int kAheadSlots = 256;
// Databases the launcher can follow at once; one without partheal takes an
// entry only until a database that needs one comes along.
constexpr int kDatabaseEntries = 1024;

struct Shared {
  LWLock* lock;      // guards the database entries and `launcher`
  PGPROC* launcher;  // the running launcher: its latch; nullptr while there is none
  int nrequests;
  Request* requests;
  DatabaseEntry databases[kDatabaseEntries];
  slock_t ahead_mutex;
  AheadSlot ahead[kAheadSlots];
};

Shared& shared();

}  // namespace partheal::worker
