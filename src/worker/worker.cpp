// The per-database background worker. It serves partition requests, each in
// a transaction of its own, so a partition it commits is visible to every
// session at once and survives the asker's rollback.
#include <fmt/format.h>

#include <cstring>

#include "errors.hpp"
#include "heal/ensure_covering.hpp"
#include "pg/boundary.hpp"
#include "worker/shared.hpp"

extern "C" {
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"
}

namespace partheal::worker {

namespace {

constexpr long kIdleWakeMs = 10000;

void copy_text(char* dst, const std::string& src, size_t size) {
  strlcpy(dst, src.c_str(), size);
}

Answer create_in_own_transaction(Oid relid, int64 id, int64 partition_size) {
  Answer answer;
  try {
    pg::guard([] {
      SetCurrentStatementStartTimestamp();
      StartTransactionCommand();
      PushActiveSnapshot(GetTransactionSnapshot());
      pgstat_report_activity(STATE_RUNNING, "partheal: creating a partition");
    });
    heal::Ensured ensured = heal::ensure_covering(relid, id, partition_size);
    pg::guard([] {
      PopActiveSnapshot();
      CommitTransactionCommand();
      pgstat_report_activity(STATE_IDLE, nullptr);
    });
    copy_text(answer.partition, ensured.partition, sizeof(answer.partition));
    copy_text(answer.range, ensured.range, sizeof(answer.range));
  } catch (const PgError& e) {
    // guard() flushed the error; aborting is what makes the worker reusable.
    pg::guard([] {
      AbortCurrentTransaction();
      pgstat_report_activity(STATE_IDLE, nullptr);
    });
    const ErrorFields& f = e.fields();
    answer.sqlerrcode = f.sqlerrcode;
    copy_text(answer.message, f.message, sizeof(answer.message));
    copy_text(answer.detail, f.detail, sizeof(answer.detail));
    copy_text(answer.hint, f.hint, sizeof(answer.hint));
    std::string line = fmt::format("{} could not create the partition of relation {} for id {}: {}",
                                   errors::kLogCreateFailed, relid, id, f.message);
    const char* text = line.c_str();
    int code = f.sqlerrcode;
    pg::guard([&] { ereport(LOG, (errcode(code), errmsg_internal("%s", text))); });
  }
  return answer;
}

void serve_pending(Oid dboid) {
  Shared& s = shared();
  for (int i = 0; i < s.nrequests; ++i) {
    Request& r = s.requests[i];
    SpinLockAcquire(&r.mutex);
    bool mine = r.state == RequestState::kPending && r.dboid == dboid;
    uint64 generation = r.generation;
    Oid relid = r.relid;
    int64 id = r.id;
    int64 size = r.partition_size;
    if (mine) r.state = RequestState::kRunning;
    SpinLockRelease(&r.mutex);
    if (!mine) continue;

    Answer answer = create_in_own_transaction(relid, id, size);
    SpinLockAcquire(&r.mutex);
    if (r.generation == generation && r.state == RequestState::kRunning) {
      r.answer = answer;
      r.state = RequestState::kDone;
    }
    SpinLockRelease(&r.mutex);
    pg::guard([&] { ConditionVariableBroadcast(&r.answered); });
  }
}

// Runs at every exit, FATAL included: frees the slot and hands back any
// request this worker had taken, so a waiting backend starts a new worker.
void on_worker_exit(int, Datum arg) {
  Oid dboid = DatumGetObjectId(arg);
  Shared& s = shared();
  LWLockAcquire(s.lock, LW_EXCLUSIVE);
  WorkerSlot* w = find_worker(dboid);
  if (w != nullptr && (w->proc == MyProc || w->proc == nullptr)) w->dboid = InvalidOid;
  LWLockRelease(s.lock);
  for (int i = 0; i < s.nrequests; ++i) {
    Request& r = s.requests[i];
    SpinLockAcquire(&r.mutex);
    bool ours = r.dboid == dboid && r.state == RequestState::kRunning;
    if (ours) r.state = RequestState::kPending;
    SpinLockRelease(&r.mutex);
    if (ours || r.dboid == dboid) ConditionVariableBroadcast(&r.answered);
  }
}

void worker_body(Datum arg) {
  Oid dboid = DatumGetObjectId(arg);
  pg::guard([&] {
    before_shmem_exit(on_worker_exit, arg);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
    pgstat_report_appname("partheal worker");
  });
  Shared& s = shared();
  pg::guard([&] {
    LWLockAcquire(s.lock, LW_EXCLUSIVE);
    WorkerSlot* w = find_worker(dboid);
    if (w != nullptr) {
      w->proc = MyProc;
      w->starting = false;
    }
    LWLockRelease(s.lock);
  });
  for (;;) {
    serve_pending(dboid);
    pg::guard([] {
      (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, kIdleWakeMs,
                      PG_WAIT_EXTENSION);
      ResetLatch(MyLatch);
      CHECK_FOR_INTERRUPTS();
      if (ConfigReloadPending) {
        ConfigReloadPending = false;
        ProcessConfigFile(PGC_SIGHUP);
      }
    });
  }
}

}  // namespace

}  // namespace partheal::worker

extern "C" {
PGDLLEXPORT void partheal_worker_main(Datum arg);
void partheal_worker_main(Datum arg) {
  partheal::pg::enter_worker(partheal::worker::worker_body, arg);
}
}
