// partheal_workers(): the launcher's view of every database it follows, for
// DBAs and for the lifecycle tests: whether a worker runs there and why not,
// and what shared state the database holds.
#include <vector>

#include "registry/table_state.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "settings.hpp"
#include "worker/ahead_queue.hpp"
#include "worker/back_offs.hpp"
#include "worker/databases.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"
}

namespace partheal::worker {

namespace {

const char* state_of(const DatabaseEntry& e) {
  for (pid_t pid : e.paused_by)
    if (pid != 0) return "paused";
  if (e.has_handle) return e.proc != nullptr ? "running" : "starting";
  if (e.unrunnable) return "unrunnable";
  if (e.no_slot) return "no slot";
  if (e.no_extension) return "no extension";
  return "stopped";
}

}  // namespace

}  // namespace partheal::worker

using namespace partheal;

PARTHEAL_SQL_FUNCTION(partheal_workers) {
  settings::require_preloaded();
  std::vector<worker::DatabaseEntry> entries = worker::database_entries();
  struct Row {
    Oid dboid;
    const char* state;
    int pid;
    int tables;
    int queued;
    uint64 rounds;
    int backing_off;
  };
  std::vector<Row> rows;
  for (const worker::DatabaseEntry& e : entries) {
    int pid = 0;
    if (e.proc != nullptr) pid = e.proc->pid;
    rows.push_back(Row{e.dboid, worker::state_of(e), pid, registry::forget_database(e.dboid, true),
                       worker::queued_attempts(e.dboid), e.rounds,
                       worker::back_offs::waiting_count(e.dboid)});
  }
  // Shared state of a database the launcher no longer follows: a leak.
  for (Oid dboid : registry::databases_with_state()) {
    bool known = false;
    for (const Row& row : rows) known = known || row.dboid == dboid;
    if (!known)
      rows.push_back(Row{dboid, "forgotten", 0, registry::forget_database(dboid, true),
                         worker::queued_attempts(dboid), 0,
                         worker::back_offs::waiting_count(dboid)});
  }
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  pg::guard([&] {
    InitMaterializedSRF(fcinfo, 0);
    for (const Row& row : rows) {
      // 0.2's declaration ends before datname, 0.10's before rounds, 0.12's
      // before backing_off: only the declared columns are read.
      char* datname = get_database_name(row.dboid);
      NameData* name = static_cast<NameData*>(palloc0(sizeof(NameData)));
      if (datname != nullptr) namestrcpy(name, datname);
      Datum values[8] = {ObjectIdGetDatum(row.dboid),
                         CStringGetTextDatum(row.state),
                         Int32GetDatum(row.pid),
                         Int32GetDatum(row.tables),
                         Int32GetDatum(row.queued),
                         NameGetDatum(name),
                         Int64GetDatum(static_cast<int64>(row.rounds)),
                         Int32GetDatum(row.backing_off)};
      bool nulls[8] = {false, false, row.pid == 0, false, false, datname == nullptr, false, false};
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return Datum(0);
}
