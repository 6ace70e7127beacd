// DROP DATABASE refuses a database that other processes are connected to,
// the partheal worker included. The utility hook stops the worker first and
// marks the database, so the postmaster's restart of it exits at once.
#include <csignal>

#include "pg/boundary.hpp"
#include "worker/drop_database.hpp"
#include "worker/shared.hpp"

extern "C" {
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
}

namespace partheal::worker {

namespace {

ProcessUtility_hook_type previous_hook = nullptr;
constexpr int kStopWaitMs = 10000;

void mark_dropping(Oid dboid) {
  Shared& s = shared();
  SpinLockAcquire(&s.dropping_mutex);
  // A ring: a database dropped long ago has had its worker gone for long.
  static_assert(kDroppingSlots > 0);
  int free_slot = 0;
  for (int i = 0; i < kDroppingSlots; ++i)
    if (s.dropping[i] == InvalidOid || s.dropping[i] == dboid) {
      free_slot = i;
      break;
    }
  if (s.dropping[free_slot] != dboid) {
    for (int i = kDroppingSlots - 1; i > free_slot; --i) s.dropping[i] = s.dropping[i - 1];
    s.dropping[free_slot] = dboid;
  }
  SpinLockRelease(&s.dropping_mutex);
}

void unmark_dropping(Oid dboid) {
  Shared& s = shared();
  SpinLockAcquire(&s.dropping_mutex);
  for (Oid& d : s.dropping)
    if (d == dboid) d = InvalidOid;
  SpinLockRelease(&s.dropping_mutex);
}

void stop_worker(Oid dboid) {
  Shared& s = shared();
  for (int waited = 0; waited < kStopWaitMs; waited += 10) {
    pid_t pid = pg::guard([&] {
      LWLockAcquire(s.lock, LW_SHARED);
      WorkerSlot* w = find_worker(dboid);
      pid_t found = (w != nullptr && w->proc != nullptr) ? w->proc->pid : 0;
      bool present = w != nullptr;
      LWLockRelease(s.lock);
      return present ? (found != 0 ? found : -1) : 0;
    });
    if (pid == 0) return;
    if (pid > 0) kill(pid, SIGTERM);
    pg::guard([] {
      pg_usleep(10000L);
      CHECK_FOR_INTERRUPTS();
    });
  }
}

void drop_database_hook(PlannedStmt* pstmt, const char* query, bool read_only_tree,
                        ProcessUtilityContext context, ParamListInfo params, QueryEnvironment* env,
                        DestReceiver* dest, QueryCompletion* qc) {
  const char* name = castNode(DropdbStmt, pstmt->utilityStmt)->dbname;
  Oid dropped = pg::guard([&] { return get_database_oid(name, true); });
  if (dropped != InvalidOid) {
    mark_dropping(dropped);
    stop_worker(dropped);
  }
  try {
    pg::guard([&] {
      if (previous_hook)
        previous_hook(pstmt, query, read_only_tree, context, params, env, dest, qc);
      else
        standard_ProcessUtility(pstmt, query, read_only_tree, context, params, env, dest, qc);
    });
  } catch (...) {
    // The database stays: its worker may run again.
    if (dropped != InvalidOid) unmark_dropping(dropped);
    throw;
  }
}

}  // namespace

void on_utility(PlannedStmt* pstmt, const char* query, bool read_only_tree,
                ProcessUtilityContext context, ParamListInfo params, QueryEnvironment* env,
                DestReceiver* dest, QueryCompletion* qc) {
  // Every other statement passes straight through: no C++ frame, no guard.
  if (!IsA(pstmt->utilityStmt, DropdbStmt)) {
    if (previous_hook)
      previous_hook(pstmt, query, read_only_tree, context, params, env, dest, qc);
    else
      standard_ProcessUtility(pstmt, query, read_only_tree, context, params, env, dest, qc);
    return;
  }
  struct Args {
    PlannedStmt* pstmt;
    const char* query;
    bool read_only_tree;
    ProcessUtilityContext context;
    ParamListInfo params;
    QueryEnvironment* env;
    DestReceiver* dest;
    QueryCompletion* qc;
  } args{pstmt, query, read_only_tree, context, params, env, dest, qc};
  pg::enter(
      [](Datum d) {
        auto* a = reinterpret_cast<Args*>(DatumGetPointer(d));
        drop_database_hook(a->pstmt, a->query, a->read_only_tree, a->context, a->params, a->env,
                           a->dest, a->qc);
      },
      PointerGetDatum(&args));
}

void install_drop_database_hook() {
  previous_hook = ProcessUtility_hook;
  ProcessUtility_hook = on_utility;
}

}  // namespace partheal::worker
