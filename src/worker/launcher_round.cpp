// The launcher's round over the databases it follows, in three steps per
// entry: reap (a worker that stopped), decide (under the entries' lock) and
// act (the postmaster calls, outside it).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "pg/boundary.hpp"
#include "worker/databases_internal.hpp"
#include "worker/databases.hpp"

extern "C" {
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/procarray.h"
#include "utils/timestamp.h"
}

namespace partheal::worker {

using namespace entries;

namespace {

// A worker that fails this soon after its start counts as a quick exit: the
// next start backs off (1 s, doubling to 30 s), so a database that makes
// its worker fail at once does not make it fail in a loop. Stops on purpose
// (a pause, a database closed) and "no partheal here" are no failures.
constexpr long kQuickExitMs = 10000;
constexpr long kMaxBackoffMs = 30000;
// After no background worker slot was free, the next start waits this long.
constexpr long kNoSlotRetryMs = 1000;
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

// What one round knows across entries.
struct Round {
  const std::vector<DatabaseSeen>& databases;
  TimestampTz now;
  int reservations;  // databases paused while their worker ran: they keep their slots
  int probes = 0;
  long sleep_ms = 1000;

  const DatabaseSeen* seen_of(Oid dboid) const {
    auto it = std::lower_bound(databases.begin(), databases.end(), dboid,
                               [](const DatabaseSeen& d, Oid o) { return d.dboid < o; });
    return it != databases.end() && it->dboid == dboid ? &*it : nullptr;
  }
};

enum class Action { kNothing, kForget, kStop, kStart };

// What the round does to one entry, decided under the lock.
struct Decision {
  Action action = Action::kNothing;
  Oid dboid = InvalidOid;
  bool had_handle = false;
  WorkerHandle handle{};
};

// Lock held. A worker that stopped gives its handle back; one that stopped
// soon after its start, not on purpose, makes the next start back off.
void reap(DatabaseEntry& e, TimestampTz now) {
  if (!e.has_handle) return;
  LocalHandle h(e.handle);
  pid_t pid = 0;
  if (GetBackgroundWorkerPid(h.get(), &pid) != BGWH_STOPPED) return;
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

// Lock held. A pause outlives no backend: one killed in the middle of its
// DDL leaves the database to the launcher again.
void drop_dead_pausers(DatabaseEntry& e) {
  bool was_paused = paused(e);
  for (pid_t& pid : e.paused_by)
    if (pid != 0 && BackendPidGetProc(pid) == nullptr) pid = 0;
  if (was_paused && !paused(e) && e.reserved) e.wanted = true;
}

// Lock held.
Decision decide(DatabaseEntry& e, Round& round) {
  Decision d;
  d.dboid = e.dboid;
  const DatabaseSeen* seen = round.seen_of(e.dboid);
  reap(e, round.now);
  drop_dead_pausers(e);
  e.unrunnable = seen != nullptr && !seen->runnable;
  bool reprobe = e.no_extension && TimestampDifferenceExceeds(e.probed_at, round.now, kReprobeMs);
  bool should_run =
      seen != nullptr && seen->runnable && !paused(e) && (!e.no_extension || e.wanted || reprobe);
  bool probe = !e.wanted && (e.no_extension || e.probed_at == 0);
  // A reservation is for a database whose worker will run again.
  if (e.reserved && !paused(e) && !should_run) e.reserved = false;
  d.had_handle = e.has_handle;
  d.handle = e.handle;
  if (seen == nullptr) {
    d.action = Action::kForget;
    e.dboid = InvalidOid;
  } else if (e.has_handle && !should_run) {
    d.action = Action::kStop;
    e.stopped_on_purpose = true;
  } else if (!e.has_handle && should_run && (e.not_before <= round.now || e.wanted) &&
             (!probe || round.probes < kProbesPerRound) &&
             (e.reserved || round.reservations == 0)) {
    d.action = Action::kStart;
    if (probe) ++round.probes;
    e.no_extension = false;
  } else if (!e.has_handle && should_run) {
    long wait =
        e.not_before > round.now ? TimestampDifferenceMilliseconds(round.now, e.not_before) : 1000;
    round.sleep_ms = Min(round.sleep_ms, Max(1L, wait));
  }
  return d;
}

// Outside the lock: the postmaster calls, then the start's outcome written
// back to the entry, if it is still that database's.
void act(DatabaseEntry& e, const Decision& d, Round& round) {
  if (d.action == Action::kForget) {
    if (d.had_handle) terminate(d.handle);
    forget_database_state(d.dboid);
  } else if (d.action == Action::kStop) {
    terminate(d.handle);
  } else if (d.action == Action::kStart) {
    WorkerHandle started{};
    Start result = start_worker(d.dboid, &started);
    locked(LW_EXCLUSIVE, [&] {
      if (e.dboid != d.dboid) return;
      e.no_slot = result == Start::kNoSlot;
      e.no_slot_at = GetCurrentTimestamp();
      if (result == Start::kStarted) {
        e.has_handle = true;
        e.handle = started;
        e.started_at = GetCurrentTimestamp();
        if (e.reserved) --round.reservations;
        e.reserved = false;
      } else {
        e.not_before = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kNoSlotRetryMs);
      }
    });
    if (result == Start::kNoSlot) round.sleep_ms = Min(round.sleep_ms, kNoSlotRetryMs);
  }
}

}  // namespace

long launcher_round(const std::vector<DatabaseSeen>& existing) {
  Round round{existing, GetCurrentTimestamp(), 0};
  locked(LW_EXCLUSIVE, [&] {
    for (const DatabaseSeen& d : existing)
      if (d.runnable) (void)find_or_add(d.dboid, false);
  });
  // Databases paused while their worker ran keep their slots: no other
  // database's worker starts until they have theirs back.
  round.reservations = locked(LW_SHARED, [] {
    int n = 0;
    for (const DatabaseEntry& e : databases().entries)
      if (e.dboid != InvalidOid && e.reserved) ++n;
    return n;
  });
  // Two passes: databases a backend wants a worker for come first, so that
  // a probe of some other database never takes the slot a heal needs.
  for (int pass = 0; pass < 2; ++pass) {
    for (DatabaseEntry& e : databases().entries) {
      Decision d = locked(LW_EXCLUSIVE, [&] {
        if (e.dboid == InvalidOid || (pass == 0) != e.wanted) return Decision{};
        return decide(e, round);
      });
      act(e, d, round);
    }
  }
  return round.sleep_ms;
}

}  // namespace partheal::worker
