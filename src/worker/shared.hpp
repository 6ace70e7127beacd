// The shared memory between backends and the per-database workers: one heal
// request slot per backend (a backend waits for one partition at a time), a
// queue of create-ahead attempts, and one worker slot per database.
#pragma once

#include "pg/postgres.hpp"

extern "C" {
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
}

namespace partheal::worker {

enum class RequestState : uint32 { kFree, kPending, kRunning, kDone };

constexpr size_t kTextSize = 512;

// Plain data, copied out of shared memory under the request's spinlock.
struct Answer {
  int sqlerrcode = 0;  // 0: the partition exists now
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

struct WorkerSlot {
  Oid dboid;          // InvalidOid: free
  bool starting;      // registered with the postmaster, not yet running
  TimestampTz since;  // when it was registered
  PGPROC* proc;       // set by the worker once it runs; its latch wakes it
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
};

constexpr int kAheadSlots = 256;
constexpr int kDroppingSlots = 8;

struct Shared {
  LWLock* lock;  // guards the worker slots
  int nrequests;
  int nworkers;
  WorkerSlot* workers;
  Request* requests;
  slock_t ahead_mutex;
  AheadSlot ahead[kAheadSlots];
  // Databases being dropped: a worker started for one exits at once.
  slock_t dropping_mutex;
  Oid dropping[kDroppingSlots];
};

Shared& shared();

// The slot of the worker for dboid, or nullptr; call with shared().lock held.
WorkerSlot* find_worker(Oid dboid);

// Wakes the worker of dboid, starting one if there is none; waits for the
// postmaster to start it only when asked to. Throws PH003.
void wake_or_start_worker(Oid dboid, bool wait_for_start);

}  // namespace partheal::worker
