#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/pause.hpp"
#include "registry/table_state.hpp"
#include "settings.hpp"
#include "worker/ahead_queue.hpp"
#include "worker/back_offs.hpp"
#include "worker/databases_internal.hpp"
#include "worker/databases.hpp"

extern "C" {
#include "access/xact.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "storage/procarray.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

namespace partheal::worker {

namespace entries {

Databases* shared_databases = nullptr;

Databases& databases() {
  return *shared_databases;
}

bool paused(const DatabaseEntry& e) {
  for (pid_t pid : e.paused_by)
    if (pid != 0) return true;
  return false;
}

DatabaseEntry* find(Oid dboid) {
  for (DatabaseEntry& e : databases().entries)
    if (e.dboid == dboid) return &e;
  return nullptr;
}

DatabaseEntry* find_or_add(Oid dboid, bool may_evict) {
  if (DatabaseEntry* e = find(dboid)) return e;
  DatabaseEntry* idle = nullptr;
  for (DatabaseEntry& e : databases().entries) {
    if (e.dboid == InvalidOid) {
      idle = &e;
      break;
    }
    // Only a database known to have no partheal, hence no shared state.
    if (may_evict && idle == nullptr && e.no_extension && !e.has_handle && !e.wanted && !paused(e))
      idle = &e;
  }
  if (idle != nullptr) {
    *idle = DatabaseEntry{};
    idle->dboid = dboid;
  }
  return idle;
}

void terminate(const WorkerHandle& handle) {
  LocalHandle h(handle);
  pg::guard([&] { TerminateBackgroundWorker(h.get()); });
}

void forget_database_state(Oid dboid) {
  (void)registry::forget_database(dboid);
  drop_queued_attempts(dboid);
  back_offs::forget_all_but(dboid, nullptr);
}

}  // namespace entries

using namespace entries;

namespace {

constexpr long kPauseWaitMs = 10000;
// How long a backend waits for the launcher's verdict on starting a worker.
constexpr long kVerdictWaitMs = 2000;

void wake_launcher() {
  PGPROC* launcher = locked(LW_SHARED, [] { return databases().launcher; });
  if (launcher != nullptr) SetLatch(&launcher->procLatch);
}

BgwHandleStatus status_of(const WorkerHandle& handle) {
  LocalHandle h(handle);
  return pg::guard([&] {
    pid_t pid = 0;
    return GetBackgroundWorkerPid(h.get(), &pid);
  });
}

[[noreturn]] void no_worker(const char* detail) {
  pg::fail(errors::kWorkerUnavailable, "could not start a partheal worker", detail,
           "See \"Capacity\" in partheal's README.");
}

}  // namespace

void want_worker(Oid dboid, bool wait_for_verdict) {
  TimestampTz asked = GetCurrentTimestamp();
  bool running = pg::guard([&] {
    LWLockAcquire(databases().lock, LW_EXCLUSIVE);
    DatabaseEntry* e = find_or_add(dboid, true);
    bool woken = false;
    if (e != nullptr) {
      e->wanted = true;
      if (e->proc != nullptr) {
        SetLatch(&e->proc->procLatch);
        woken = true;
      }
    }
    LWLockRelease(databases().lock);
    return woken;
  });
  if (running) return;
  wake_launcher();
  if (!wait_for_verdict) return;
  // The launcher answers within milliseconds: a worker registered, or why
  // none can be. Only a no-slot verdict newer than this call counts, so a
  // slot freed since the last try is tried again first.
  for (long waited = 0; waited < kVerdictWaitMs; waited += 10) {
    enum { kWait, kStarted, kNoSlot, kUnrunnable } verdict = kWait;
    pg::guard([&] {
      LWLockAcquire(databases().lock, LW_SHARED);
      DatabaseEntry* e = find(dboid);
      if (e == nullptr || e->has_handle || e->proc != nullptr || paused(*e))
        verdict = kStarted;  // or paused for DDL: the heal waits it out
      else if (e->unrunnable)
        verdict = kUnrunnable;
      else if (e->no_slot && e->no_slot_at >= asked)
        verdict = kNoSlot;
      LWLockRelease(databases().lock);
    });
    if (verdict == kStarted) return;
    if (verdict == kUnrunnable)
      no_worker(
          "The database is a template or does not allow connections, so no partheal "
          "worker runs in it.");
    if (verdict == kNoSlot)
      no_worker(fmt::format("All max_worker_processes ({}) background worker slots are in use.",
                            max_worker_processes)
                    .c_str());
    pg::pause_ms(10);
  }
}

namespace {

// Asked again when the CREATE EXTENSION transaction commits, however long
// it ran: the worker asked for at CREATE EXTENSION looks for 10 s only.
bool want_at_commit = false;

void on_extension_commit(XactEvent event, void*) noexcept {
  if (!want_at_commit) return;
  if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT) return;
  bool commit = event == XACT_EVENT_COMMIT;
  want_at_commit = false;
  if (!commit) return;
  try {
    want_worker(MyDatabaseId, false);
  } catch (...) {
    // No entry free: the launcher finds the database on its own.
  }
}

}  // namespace

void extension_created() {
  static bool registered = false;
  if (!registered) {
    pg::guard([] { RegisterXactCallback(on_extension_commit, nullptr); });
    registered = true;
  }
  want_at_commit = true;
  try {
    want_worker(MyDatabaseId, false);
  } catch (const PgError&) {
    // No entry free: the launcher finds the database on its own.
  }
}

void pause_worker(Oid dboid) {
  std::optional<WorkerHandle> handle;
  pg::guard([&] {
    LWLockAcquire(databases().lock, LW_EXCLUSIVE);
    DatabaseEntry* e = find_or_add(dboid, true);
    if (e != nullptr) {
      for (pid_t& pid : e->paused_by)
        if (pid == 0 || pid == MyProcPid) {
          pid = MyProcPid;
          break;
        }
      if (e->has_handle) {
        handle = e->handle;
        e->stopped_on_purpose = true;
        e->reserved = true;
      }
    }
    LWLockRelease(databases().lock);
  });
  if (!handle) return;
  terminate(*handle);
  for (long waited = 0; waited < kPauseWaitMs; waited += 10) {
    if (status_of(*handle) == BGWH_STOPPED) return;
    pg::pause_ms(10);
  }
}

void resume_worker(Oid dboid) {
  pg::guard([&] {
    LWLockAcquire(databases().lock, LW_EXCLUSIVE);
    if (DatabaseEntry* e = find(dboid)) {
      for (pid_t& pid : e->paused_by)
        if (pid == MyProcPid) pid = 0;
      if (e->reserved && !paused(*e)) e->wanted = true;  // first in line for a slot
    }
    LWLockRelease(databases().lock);
  });
  wake_launcher();
}

bool worker_may_start(Oid dboid) {
  return pg::guard([&] {
    LWLockAcquire(databases().lock, LW_SHARED);
    DatabaseEntry* e = find(dboid);
    bool ok = e != nullptr && !paused(*e) && e->proc == nullptr;
    LWLockRelease(databases().lock);
    return ok;
  });
}

bool announce_worker(Oid dboid, bool* wanted) {
  return pg::guard([&] {
    LWLockAcquire(databases().lock, LW_EXCLUSIVE);
    DatabaseEntry* e = find(dboid);
    bool ours = e != nullptr && !paused(*e) && e->proc == nullptr;
    if (ours) {
      e->proc = MyProc;
      *wanted = e->wanted;
      e->wanted = false;
      e->no_slot = false;
      e->probed_at = GetCurrentTimestamp();
    }
    LWLockRelease(databases().lock);
    return ours;
  });
}

void worker_exits(Oid dboid, bool no_extension) {
  PGPROC* launcher = locked(LW_EXCLUSIVE, [&] {
    DatabaseEntry* e = find(dboid);
    if (e != nullptr && e->proc == MyProc) {
      e->proc = nullptr;
      if (no_extension) e->no_extension = true;
    }
    return databases().launcher;
  });
  if (no_extension) forget_database_state(dboid);
  if (launcher != nullptr) pg::guard([&] { SetLatch(&launcher->procLatch); });
}

void set_launcher(PGPROC* proc) {
  locked(LW_EXCLUSIVE, [&] {
    if (proc != nullptr || databases().launcher == MyProc) databases().launcher = proc;
  });
}

void count_round(Oid dboid) {
  pg::guard([&] {
    LWLockAcquire(databases().lock, LW_EXCLUSIVE);
    if (DatabaseEntry* e = find(dboid)) ++e->rounds;
    LWLockRelease(databases().lock);
  });
}

std::vector<DatabaseEntry> database_entries() {
  std::vector<DatabaseEntry> out;
  size_t n = 0;
  out.resize(entries::kDatabaseEntries);
  pg::guard([&] {
    LWLockAcquire(databases().lock, LW_SHARED);
    for (const DatabaseEntry& e : databases().entries)
      if (e.dboid != InvalidOid) out[n++] = e;
    LWLockRelease(databases().lock);
  });
  out.resize(n);
  return out;
}

Size databases_shmem_size() {
  return sizeof(Databases);
}

void init_databases(void* memory, bool found) {
  shared_databases = static_cast<Databases*>(memory);
  if (found) return;
  std::memset(memory, 0, sizeof(Databases));
  // Runs inside shmem.cpp's guard: GetNamedLWLockTranche may raise an ERROR.
  shared_databases->lock = &(GetNamedLWLockTranche("partheal"))->lock;
}

}  // namespace partheal::worker
