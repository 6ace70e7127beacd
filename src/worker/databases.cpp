#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "ahead/table_state.hpp"
#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/pause.hpp"
#include "settings.hpp"
#include "worker/databases.hpp"

extern "C" {
#include "access/xact.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/procarray.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

namespace partheal::worker {

namespace {

// A worker that fails this soon after its start counts as a quick exit: the
// next start backs off (1 s, doubling to 30 s), so a database that makes
// its worker fail at once does not make it fail in a loop. Stops on purpose
// (a pause, a database closed) and "no partheal here" are no failures.
constexpr long kQuickExitMs = 10000;
constexpr long kMaxBackoffMs = 30000;
// After no background worker slot was free, the next start waits this long.
constexpr long kNoSlotRetryMs = 1000;
constexpr long kPauseWaitMs = 10000;
// How long a backend waits for the launcher's verdict on starting a worker.
constexpr long kVerdictWaitMs = 2000;
// A database found without partheal is looked at again this often, for an
// extension created in a transaction that outlasted the worker's look.
constexpr long kReprobeMs = 300000;
// Workers started in one round only to look for partheal: slots stay free
// for the databases that need one, and for parallel query.
constexpr int kProbesPerRound = 2;

WorkerHandle to_shared(BackgroundWorkerHandle* handle) {
  WorkerHandle out;
  std::memcpy(&out, handle, sizeof(out));
  return out;
}

// The shared copy as PostgreSQL's functions take it, on the caller's stack:
// no allocation, so nothing can fail while the entries' lock is held.
struct LocalHandle {
  alignas(8) unsigned char bytes[sizeof(WorkerHandle)];
  explicit LocalHandle(const WorkerHandle& h) { std::memcpy(bytes, &h, sizeof(h)); }
  BackgroundWorkerHandle* get() { return reinterpret_cast<BackgroundWorkerHandle*>(bytes); }
};

bool paused(const DatabaseEntry& e) {
  for (pid_t pid : e.paused_by)
    if (pid != 0) return true;
  return false;
}

// Call with the lock held.
DatabaseEntry* find(Oid dboid) {
  for (DatabaseEntry& e : shared().databases)
    if (e.dboid == dboid) return &e;
  return nullptr;
}

// Call with the lock held exclusively. A backend's database may take the
// entry of a database with neither worker, wish nor pause when the table is
// full; the launcher's discoveries take free entries only.
DatabaseEntry* find_or_add(Oid dboid, bool may_evict) {
  if (DatabaseEntry* e = find(dboid)) return e;
  DatabaseEntry* idle = nullptr;
  for (DatabaseEntry& e : shared().databases) {
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

// The queued create-ahead attempts of a database go with it.
void drop_queued_attempts(Oid dboid) {
  Shared& s = shared();
  SpinLockAcquire(&s.ahead_mutex);
  for (AheadSlot& slot : s.ahead)
    if (slot.used && slot.dboid == dboid) slot.used = false;
  SpinLockRelease(&s.ahead_mutex);
}

void wake_launcher() {
  Shared& s = shared();
  PGPROC* launcher = pg::guard([&] {
    LWLockAcquire(s.lock, LW_SHARED);
    PGPROC* p = s.launcher;
    LWLockRelease(s.lock);
    return p;
  });
  if (launcher != nullptr) SetLatch(&launcher->procLatch);
}

enum class Start { kStarted, kNoSlot };

Start start_worker(Oid dboid, WorkerHandle* handle) {
  BackgroundWorker bgw;
  std::memset(&bgw, 0, sizeof(bgw));
  bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
  // The launcher restarts it, whatever its exit code, where it should run.
  bgw.bgw_restart_time = BGW_NEVER_RESTART;
  strlcpy(bgw.bgw_library_name, "partheal", BGW_MAXLEN);
  strlcpy(bgw.bgw_function_name, "partheal_worker_main", BGW_MAXLEN);
  strlcpy(bgw.bgw_type, "partheal worker", BGW_MAXLEN);
  std::string name = fmt::format("partheal worker for database {}", dboid);
  strlcpy(bgw.bgw_name, name.c_str(), BGW_MAXLEN);
  bgw.bgw_main_arg = ObjectIdGetDatum(dboid);
  bgw.bgw_notify_pid = MyProcPid;
  BackgroundWorkerHandle* registered = nullptr;
  bool ok = pg::guard([&] { return RegisterDynamicBackgroundWorker(&bgw, &registered); });
  if (!ok) return Start::kNoSlot;
  *handle = to_shared(registered);
  pg::guard([&] { pfree(registered); });
  return Start::kStarted;
}

BgwHandleStatus status_of(const WorkerHandle& handle) {
  LocalHandle h(handle);
  return pg::guard([&] {
    pid_t pid = 0;
    return GetBackgroundWorkerPid(h.get(), &pid);
  });
}

void terminate(const WorkerHandle& handle) {
  LocalHandle h(handle);
  pg::guard([&] { TerminateBackgroundWorker(h.get()); });
}

// Frees what belongs to a database that is gone, once its entry is: its
// tables' states and its queued attempts. Runs in the launcher, whichever
// database the DROP ran from.
void forget_gone_database(Oid dboid) {
  (void)ahead::forget_database(dboid);
  drop_queued_attempts(dboid);
}

[[noreturn]] void no_worker(const char* detail) {
  pg::fail(errors::kWorkerUnavailable, "could not start a partheal worker", detail,
           "See \"Capacity\" in partheal's README.");
}

}  // namespace

void want_worker(Oid dboid, bool wait_for_verdict) {
  Shared& s = shared();
  TimestampTz asked = GetCurrentTimestamp();
  bool running = pg::guard([&] {
    LWLockAcquire(s.lock, LW_EXCLUSIVE);
    DatabaseEntry* e = find_or_add(dboid, true);
    bool woken = false;
    if (e != nullptr) {
      e->wanted = true;
      if (e->proc != nullptr) {
        SetLatch(&e->proc->procLatch);
        woken = true;
      }
    }
    LWLockRelease(s.lock);
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
      LWLockAcquire(s.lock, LW_SHARED);
      DatabaseEntry* e = find(dboid);
      if (e == nullptr || e->has_handle || e->proc != nullptr || paused(*e))
        verdict = kStarted;  // or paused for DDL: the heal waits it out
      else if (e->unrunnable)
        verdict = kUnrunnable;
      else if (e->no_slot && e->no_slot_at >= asked)
        verdict = kNoSlot;
      LWLockRelease(s.lock);
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
  Shared& s = shared();
  std::optional<WorkerHandle> handle;
  pg::guard([&] {
    LWLockAcquire(s.lock, LW_EXCLUSIVE);
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
    LWLockRelease(s.lock);
  });
  if (!handle) return;
  terminate(*handle);
  for (long waited = 0; waited < kPauseWaitMs; waited += 10) {
    if (status_of(*handle) == BGWH_STOPPED) return;
    pg::pause_ms(10);
  }
}

void resume_worker(Oid dboid) {
  Shared& s = shared();
  pg::guard([&] {
    LWLockAcquire(s.lock, LW_EXCLUSIVE);
    if (DatabaseEntry* e = find(dboid)) {
      for (pid_t& pid : e->paused_by)
        if (pid == MyProcPid) pid = 0;
      if (e->reserved && !paused(*e)) e->wanted = true;  // first in line for a slot
    }
    LWLockRelease(s.lock);
  });
  wake_launcher();
}

bool worker_may_start(Oid dboid) {
  Shared& s = shared();
  return pg::guard([&] {
    LWLockAcquire(s.lock, LW_SHARED);
    DatabaseEntry* e = find(dboid);
    bool ok = e != nullptr && !paused(*e) && e->proc == nullptr;
    LWLockRelease(s.lock);
    return ok;
  });
}

bool announce_worker(Oid dboid, bool* wanted) {
  Shared& s = shared();
  return pg::guard([&] {
    LWLockAcquire(s.lock, LW_EXCLUSIVE);
    DatabaseEntry* e = find(dboid);
    bool ours = e != nullptr && !paused(*e) && e->proc == nullptr;
    if (ours) {
      e->proc = MyProc;
      *wanted = e->wanted;
      e->wanted = false;
      e->no_slot = false;
      e->probed_at = GetCurrentTimestamp();
    }
    LWLockRelease(s.lock);
    return ours;
  });
}

void worker_exits(Oid dboid, bool no_extension) {
  Shared& s = shared();
  LWLockAcquire(s.lock, LW_EXCLUSIVE);
  DatabaseEntry* e = find(dboid);
  if (e != nullptr && e->proc == MyProc) {
    e->proc = nullptr;
    if (no_extension) e->no_extension = true;
  }
  PGPROC* launcher = s.launcher;
  LWLockRelease(s.lock);
  if (no_extension) {
    (void)ahead::forget_database(dboid);
    drop_queued_attempts(dboid);
  }
  if (launcher != nullptr) SetLatch(&launcher->procLatch);
}

long launcher_round(const std::vector<DatabaseSeen>& databases) {
  Shared& s = shared();
  long sleep_ms = 1000;
  TimestampTz now = GetCurrentTimestamp();
  auto seen_of = [&](Oid dboid) -> const DatabaseSeen* {
    auto it = std::lower_bound(databases.begin(), databases.end(), dboid,
                               [](const DatabaseSeen& d, Oid o) { return d.dboid < o; });
    return it != databases.end() && it->dboid == dboid ? &*it : nullptr;
  };
  pg::guard([&] {
    LWLockAcquire(s.lock, LW_EXCLUSIVE);
    for (const DatabaseSeen& d : databases)
      if (d.runnable) (void)find_or_add(d.dboid, false);
    LWLockRelease(s.lock);
  });
  // Databases paused while their worker ran keep their slots: no other
  // database's worker starts until they have theirs back.
  int reservations = pg::guard([&] {
    LWLockAcquire(s.lock, LW_SHARED);
    int n = 0;
    for (const DatabaseEntry& e : s.databases)
      if (e.dboid != InvalidOid && e.reserved) ++n;
    LWLockRelease(s.lock);
    return n;
  });
  int probes = 0;
  // Two passes: databases a backend wants a worker for come first, so that
  // a probe of some other database never takes the slot a heal needs.
  for (int pass = 0; pass < 2; ++pass) {
    for (DatabaseEntry& e : s.databases) {
      // Decided under the lock; the postmaster calls happen outside it.
      enum { kNothing, kForget, kStop, kStart } action = kNothing;
      bool had_handle = false;
      WorkerHandle handle{};
      Oid dboid = InvalidOid;
      pg::guard([&] {
        LWLockAcquire(s.lock, LW_EXCLUSIVE);
        dboid = e.dboid;
        if (dboid == InvalidOid || (pass == 0) != e.wanted) {
          LWLockRelease(s.lock);
          return;
        }
        const DatabaseSeen* seen = seen_of(dboid);
        if (e.has_handle) {
          LocalHandle h(e.handle);
          pid_t pid = 0;
          if (GetBackgroundWorkerPid(h.get(), &pid) == BGWH_STOPPED) {
            e.has_handle = false;
            e.proc = nullptr;
            bool quick = !e.stopped_on_purpose && !e.no_extension &&
                         !TimestampDifferenceExceeds(e.started_at, now, kQuickExitMs);
            e.quick_exits = quick ? e.quick_exits + 1 : 0;
            if (quick) {
              long backoff = Min(1000L << Min(e.quick_exits - 1, 5), kMaxBackoffMs);
              e.not_before = TimestampTzPlusMilliseconds(now, backoff);
            }
            e.stopped_on_purpose = false;
          }
        }
        // A pause outlives no backend: one killed in the middle of its DDL
        // leaves the database to the launcher again.
        bool was_paused = paused(e);
        for (pid_t& pid : e.paused_by)
          if (pid != 0 && BackendPidGetProc(pid) == nullptr) pid = 0;
        if (was_paused && !paused(e) && e.reserved) e.wanted = true;
        e.unrunnable = seen != nullptr && !seen->runnable;
        bool reprobe = e.no_extension && TimestampDifferenceExceeds(e.probed_at, now, kReprobeMs);
        bool should_run = seen != nullptr && seen->runnable && !paused(e) &&
                          (!e.no_extension || e.wanted || reprobe);
        bool probe = !e.wanted && (e.no_extension || e.probed_at == 0);
        // A reservation is for a database whose worker will run again.
        if (e.reserved && !paused(e) && !should_run) e.reserved = false;
        had_handle = e.has_handle;
        handle = e.handle;
        if (seen == nullptr) {
          action = kForget;
          e.dboid = InvalidOid;
        } else if (e.has_handle && !should_run) {
          action = kStop;
          e.stopped_on_purpose = true;
        } else if (!e.has_handle && should_run && (e.not_before <= now || e.wanted) &&
                   (!probe || probes < kProbesPerRound) && (e.reserved || reservations == 0)) {
          action = kStart;
          if (probe) ++probes;
          e.no_extension = false;
        } else if (!e.has_handle && should_run) {
          long wait =
              e.not_before > now ? TimestampDifferenceMilliseconds(now, e.not_before) : 1000;
          sleep_ms = Min(sleep_ms, Max(1L, wait));
        }
        LWLockRelease(s.lock);
      });
      if (action == kForget) {
        if (had_handle) terminate(handle);
        forget_gone_database(dboid);
      } else if (action == kStop) {
        terminate(handle);
      } else if (action == kStart) {
        WorkerHandle started{};
        Start result = start_worker(dboid, &started);
        pg::guard([&] {
          LWLockAcquire(s.lock, LW_EXCLUSIVE);
          if (e.dboid == dboid) {
            e.no_slot = result == Start::kNoSlot;
            e.no_slot_at = GetCurrentTimestamp();
            if (result == Start::kStarted) {
              e.has_handle = true;
              e.handle = started;
              e.started_at = GetCurrentTimestamp();
              if (e.reserved) --reservations;
              e.reserved = false;
            } else {
              e.not_before = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kNoSlotRetryMs);
            }
          }
          LWLockRelease(s.lock);
        });
        if (result == Start::kNoSlot) sleep_ms = Min(sleep_ms, kNoSlotRetryMs);
      }
    }
  }
  return sleep_ms;
}

std::vector<DatabaseEntry> database_entries() {
  Shared& s = shared();
  std::vector<DatabaseEntry> out;
  out.reserve(kDatabaseEntries);
  pg::guard([&] {
    LWLockAcquire(s.lock, LW_SHARED);
    for (const DatabaseEntry& e : s.databases)
      if (e.dboid != InvalidOid) out.push_back(e);
    LWLockRelease(s.lock);
  });
  return out;
}

int queued_attempts(Oid dboid) {
  Shared& s = shared();
  int n = 0;
  SpinLockAcquire(&s.ahead_mutex);
  for (const AheadSlot& slot : s.ahead)
    if (slot.used && slot.dboid == dboid) ++n;
  SpinLockRelease(&s.ahead_mutex);
  return n;
}

}  // namespace partheal::worker
