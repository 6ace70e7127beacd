// The databases the launcher follows and their workers' lifecycle, as every
// process sees it in shared memory. A worker runs for a database when the
// database exists and allows connections, no database DDL has paused it,
// and partheal is installed there (or a backend wants one). The launcher
// starts workers, watches their handles and starts again any that exits,
// whatever its exit code; database DDL pauses and resumes them.
#pragma once

#include <vector>

#include "pg/compat.hpp"
#include "pg/postgres.hpp"

extern "C" {
#include "storage/proc.h"
#include "utils/timestamp.h"
}

namespace partheal::worker {

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
  // Poll rounds its workers completed since the entry was made: what a test
  // or a DBA waits on ("two rounds after X"), shown by partheal_workers().
  uint64 rounds;
};

// A backend asks for its database's worker: wakes it when it runs, or has
// the launcher start one. With `wait_for_verdict`, waits (2 s at most) for
// the launcher to register one, and throws PH003 when it found no free
// background worker slot for it.
void want_worker(Oid dboid, bool wait_for_verdict);

// Database DDL that needs the database to itself (DROP, RENAME, SET
// TABLESPACE, or CREATE DATABASE using it as a template): stops its worker
// through its handle and keeps it stopped until resume_worker, or until
// this backend exits. Waits at most 10 s for the worker to go; a cancel
// while waiting is the caller's to answer with resume_worker.
void pause_worker(Oid dboid);
void resume_worker(Oid dboid);

// The worker, before it connects: false when it must not run (the database
// is paused for DDL, or another worker has it), so it never holds up DDL.
bool worker_may_start(Oid dboid);
// The worker, connected: takes its database's entry, false as above.
// `wanted`: a backend asked for it (it may have just created the extension).
bool announce_worker(Oid dboid, bool* wanted);
// The worker, at exit. `no_extension`: partheal is not installed (or was
// just dropped): its shared state goes, and no worker starts again until a
// backend wants one.
void worker_exits(Oid dboid, bool no_extension);

// The launcher's round (launcher_round.cpp), given the databases that exist
// now (sorted by OID): frees what belongs to databases that are gone, stops
// workers that must not run, starts those that should. Returns how long the
// launcher may sleep.
struct DatabaseSeen {
  Oid dboid;
  bool runnable;  // not a template, and allows connections
};
long launcher_round(const std::vector<DatabaseSeen>& databases);

// The scheduler, after each round (worker/scheduler.cpp).
void count_round(Oid dboid);

// For partheal_workers(): a copy of the entries in use.
std::vector<DatabaseEntry> database_entries();

// The launcher, at its start (its latch) and at its exit (nullptr).
void set_launcher(PGPROC* proc);

// This module's shared memory (worker/shmem.cpp lays out all of them).
Size databases_shmem_size();
void init_databases(void* memory, bool found);

// The backend of CREATE EXTENSION partheal: its database wants a worker
// from now on (a restore may never call partheal_manage).
void extension_created();

}  // namespace partheal::worker
