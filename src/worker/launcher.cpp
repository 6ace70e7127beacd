#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "pg/boundary.hpp"
#include "pg/pause.hpp"
#include "pg/report.hpp"
#include "worker/quiet_stop.hpp"
#include "worker/databases.hpp"
#include "worker/launcher.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
}

namespace partheal::worker {

namespace {

// Every database, sorted by OID, and whether a worker may run in it (not a
// template, connections allowed). Connected to no database itself, the
// launcher can still read the shared catalog pg_database.
std::vector<DatabaseSeen> databases_now() {
  DatabaseSeen* found = nullptr;
  int count = pg::guard([&] {
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    PushActiveSnapshot(GetTransactionSnapshot());
    Relation rel = table_open(DatabaseRelationId, AccessShareLock);
    TableScanDesc scan = table_beginscan_catalog(rel, 0, nullptr);
    int n = 0, room = 64;
    // In the transaction's memory, freed by its commit; nothing here throws.
    found = static_cast<DatabaseSeen*>(palloc(sizeof(DatabaseSeen) * room));
    for (HeapTuple tuple = heap_getnext(scan, ForwardScanDirection); tuple != nullptr;
         tuple = heap_getnext(scan, ForwardScanDirection)) {
      auto* db = reinterpret_cast<Form_pg_database>(GETSTRUCT(tuple));
      if (n == room)
        found = static_cast<DatabaseSeen*>(repalloc(found, sizeof(DatabaseSeen) * (room *= 2)));
      found[n++] = DatabaseSeen{db->oid, !db->datistemplate && db->datallowconn &&
                                             db->datconnlimit != DATCONNLIMIT_INVALID_DB};
    }
    table_endscan(scan);
    table_close(rel, AccessShareLock);
    PopActiveSnapshot();
    return n;
  });
  std::vector<DatabaseSeen> out(found, found + count);
  pg::guard([] { CommitTransactionCommand(); });
  std::sort(out.begin(), out.end(),
            [](const DatabaseSeen& a, const DatabaseSeen& b) { return a.dboid < b.dboid; });
  return out;
}

void on_launcher_exit(int, Datum) {
  pg::entry([] { set_launcher(nullptr); });
}

// Lives as long as the server: each round (every second, or at once when a
// worker stops, a backend wants a worker, or database DDL is done) it
// matches the workers to the databases.
void launcher_body(Datum) {
  quiet_admin_shutdown();
  pg::guard([] {
    pqsignal(SIGTERM, die);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
    before_shmem_exit(on_launcher_exit, Datum(0));
  });
  set_launcher(MyProc);
  for (;;) {
    try {
      long sleep_ms = launcher_round(databases_now());
      pg::wait_for_work_ms(sleep_ms);
    } catch (const std::exception& e) {
      // A cancel (pg_cancel_backend) or any other error ends the round, not
      // the launcher.
      pg::guard([] {
        if (IsTransactionState()) AbortCurrentTransaction();
        LWLockReleaseAll();
        QueryCancelPending = false;
      });
      pg::report(LOG, 0, fmt::format("partheal launcher: {}", e.what()));
      pg::back_off_ms(100);
    }
  }
}

}  // namespace

void register_launcher() {
  BackgroundWorker bgw;
  std::memset(&bgw, 0, sizeof(bgw));
  bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
  bgw.bgw_restart_time = 1;  // it owns the workers: back within a second
  strlcpy(bgw.bgw_library_name, "partheal", BGW_MAXLEN);
  strlcpy(bgw.bgw_function_name, "partheal_launcher_main", BGW_MAXLEN);
  strlcpy(bgw.bgw_type, "partheal launcher", BGW_MAXLEN);
  strlcpy(bgw.bgw_name, "partheal launcher", BGW_MAXLEN);
  RegisterBackgroundWorker(&bgw);
}

}  // namespace partheal::worker

extern "C" {
PGDLLEXPORT void partheal_launcher_main(Datum arg);
void partheal_launcher_main(Datum arg) {
  partheal::pg::enter(partheal::worker::launcher_body, arg);
}
}
