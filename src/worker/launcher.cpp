#include <cstring>
#include <vector>

#include "pg/boundary.hpp"
#include "worker/launcher.hpp"
#include "worker/shared.hpp"

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
#include "utils/snapmgr.h"
}

namespace partheal::worker {

namespace {

// Databases a worker could connect to. Connected to no database itself, the
// launcher can still read the shared catalog pg_database.
std::vector<Oid> connectable_databases() {
  std::vector<Oid> out;
  out.reserve(1024);
  pg::guard([&] {
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    PushActiveSnapshot(GetTransactionSnapshot());
    Relation rel = table_open(DatabaseRelationId, AccessShareLock);
    TableScanDesc scan = table_beginscan_catalog(rel, 0, nullptr);
    for (HeapTuple tuple = heap_getnext(scan, ForwardScanDirection); tuple != nullptr;
         tuple = heap_getnext(scan, ForwardScanDirection)) {
      auto* db = reinterpret_cast<Form_pg_database>(GETSTRUCT(tuple));
      if (db->datallowconn && !db->datistemplate && out.size() < out.capacity())
        out.push_back(db->oid);
    }
    table_endscan(scan);
    table_close(rel, AccessShareLock);
    PopActiveSnapshot();
    CommitTransactionCommand();
  });
  return out;
}

void launcher_body(Datum) {
  pg::guard([] {
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
  });
  // One at a time, each waited for: a worker whose database lacks the
  // extension exits at once and gives its slot back.
  for (Oid dboid : connectable_databases()) {
    try {
      wake_or_start_worker(dboid, true);
    } catch (const PgError& e) {
      const char* text = e.what();
      pg::guard([&] { ereport(LOG, (errmsg("partheal launcher: %s", text))); });
    }
  }
  pg::guard([] { proc_exit(0); });
}

}  // namespace

void register_launcher() {
  BackgroundWorker bgw;
  std::memset(&bgw, 0, sizeof(bgw));
  bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
  bgw.bgw_restart_time = BGW_NEVER_RESTART;  // its work is done once per start
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
