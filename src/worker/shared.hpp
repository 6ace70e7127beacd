// The shared memory between backends and the per-database workers: one
// request slot per backend (a backend waits for one partition at a time) and
// one worker slot per database that has asked for a worker.
#pragma once

#include "pg/postgres.hpp"

extern "C" {
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/spin.h"
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
  Oid dboid;      // InvalidOid: free
  bool starting;  // registered with the postmaster, not yet running
  PGPROC* proc;   // set by the worker once it runs; its latch is how it is woken
};

struct Shared {
  LWLock* lock;  // guards the worker slots
  int nrequests;
  int nworkers;
  WorkerSlot* workers;
  Request* requests;
};

Shared& shared();

// The slot of the worker for dboid, or nullptr; call with shared().lock held.
WorkerSlot* find_worker(Oid dboid);

}  // namespace partheal::worker
