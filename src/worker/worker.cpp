// The per-database background worker's life: its start, signals, main loop
// and exit. What it serves is in requests.cpp (heal requests) and
// ahead_queue.cpp (create-ahead); its round is the scheduler's
// (scheduler.cpp), over the jobs registered at _PG_init.
#include <fmt/format.h>

#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/pause.hpp"
#include "pg/report.hpp"
#include "settings.hpp"
#include "worker/quiet_stop.hpp"
#include "worker/ahead_queue.hpp"
#include "worker/databases.hpp"
#include "worker/requests.hpp"
#include "worker/scheduler.hpp"

extern "C" {
#include "partitioning/partdesc.h"
#include "access/relation.h"
#include "access/xact.h"
#include "commands/extension.h"
#include "commands/sequence.h"
#include "storage/lmgr.h"
#include "utils/fmgrprotos.h"
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

// Says why and exits; the launcher decides whether another worker starts.
// A worker that only looked for partheal where there is none says so at
// DEBUG1: the launcher looks in every database.
[[noreturn]] void exit_quietly(const char* why, int level = LOG) {
  pg::report(level, 0, fmt::format("partheal worker exits: {}", why));
  pg::guard([] { proc_exit(0); });
  pg_unreachable();
}

bool extension_installed() {
  return pg::guard([] {
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    bool found = get_extension_oid("partheal", true) != InvalidOid;
    CommitTransactionCommand();
    return found;
  });
}

// The extension is not (or no longer, after DROP EXTENSION) in this
// database: its shared state goes, and no worker runs here until a backend
// wants one again, or the launcher looks again.
[[noreturn]] void exit_without_extension(Oid dboid, int level) {
  worker_exits(dboid, true);
  exit_quietly("extension \"partheal\" is not installed in this database", level);
}

// After a round that had to create partitions the next poll comes this soon.
constexpr long kBehindPollMs = 100;

// Runs at every exit, FATAL included: gives the database's entry back and
// hands back any request this worker had taken, so the next worker serves it.
void on_worker_exit(int, Datum arg) {
  Oid dboid = DatumGetObjectId(arg);
  pg::entry([dboid] {
    worker_exits(dboid, false);
    hand_back_heal_requests(dboid);
  });
}

// Every lock the worker waits for is bounded: the sequence poll, the config
// table, an ALTER EXTENSION under way. partheal.ddl_lock_timeout, as for DDL.
void bound_lock_waits() {
  std::string value = std::to_string(settings::ddl_lock_timeout_ms);
  const char* text = value.c_str();
  pg::guard([&] { SetConfigOption("lock_timeout", text, PGC_SUSET, PGC_S_OVERRIDE); });
  // Every transaction of the worker reads committed state as of each
  // statement, whatever ALTER DATABASE or ALTER ROLE set: the drain's moves
  // must see rows that writers commit while it runs (attach/reconcile.hpp).
  pg::guard([] {
    SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
  });
}

// Names the worker in the CONTEXT of everything it logs.
char worker_database[NAMEDATALEN];
void worker_context(void*) {
  errcontext("partheal worker for database \"%s\"", worker_database);
}
ErrorContextCallback worker_context_entry{nullptr, worker_context, nullptr};

// A backend that wants a worker may have just created the extension in a
// transaction this worker cannot see yet: it looks again for a while.
bool wait_for_extension(bool wanted) {
  constexpr int kLooks = 20;
  for (int look = 0;; ++look) {
    try {
      if (extension_installed()) return true;
      if (!wanted || look == kLooks) return false;
      pg::pause_ms(500);
    } catch (const PgError&) {
      // A cancel: the look goes on.
      pg::guard([] {
        if (IsTransactionState()) AbortCurrentTransaction();
        QueryCancelPending = false;
      });
    }
  }
}

void worker_body(Datum arg) {
  Oid dboid = DatumGetObjectId(arg);
  quiet_admin_shutdown();
  pg::guard([&] {
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, die);
    // A cancel (pg_cancel_backend) ends what the worker is doing, not the worker.
    pqsignal(SIGINT, StatementCancelHandler);
    BackgroundWorkerUnblockSignals();
  });
  // Never connect into a database paused for DDL: the connection alone
  // would make the DDL fail.
  if (!worker_may_start(dboid)) exit_quietly("its database is paused for DDL");
  pg::guard([&] {
    BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
    pgstat_report_appname("partheal worker");
  });
  bool wanted = false;
  if (!announce_worker(dboid, &wanted))
    exit_quietly("its database is paused for DDL, or has a worker already");
  pg::guard([&] { before_shmem_exit(on_worker_exit, arg); });
  pg::guard([&] {
    StartTransactionCommand();
    const char* name = get_database_name(dboid);
    strlcpy(worker_database, name != nullptr ? name : "?", sizeof(worker_database));
    CommitTransactionCommand();
  });
  // Outside the guard: PG_TRY puts error_context_stack back as it found it.
  worker_context_entry.previous = error_context_stack;
  error_context_stack = &worker_context_entry;
  // The launcher starts one in every database; most have no partheal.
  if (!wait_for_extension(wanted)) exit_without_extension(dboid, DEBUG1);
  bound_lock_waits();

  TimestampTz next_poll = 0;
  for (;;) {
    try {
      serve_heal_requests(dboid);
      if (GetCurrentTimestamp() >= next_poll) {
        RoundOutcome poll = run_round(dboid);
        if (poll.registrations) {
          if (!extension_installed()) exit_without_extension(dboid, LOG);
          pg::report(LOG, 0,
                     fmt::format("partheal worker: reading the registrations failed: {}",
                                 poll.registrations->what()));
        }
        next_poll = TimestampTzPlusMilliseconds(
            GetCurrentTimestamp(),
            poll.progress ? Min(kBehindPollMs, settings::naptime_ms) : settings::naptime_ms);
        // A time-keyed table's windows change with the clock: the poll comes
        // when they do, whatever the naptime.
        if (poll.wake_at > 0) next_poll = Min(next_poll, poll.wake_at);
      }
      bool served = false;
      long wait_ms = serve_create_ahead(dboid, &served);
      // A mark was reached: traffic is flowing, and the poll that measures
      // its rate (and so the headroom) should not wait a whole naptime.
      if (served)
        next_poll =
            Min(next_poll, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kBehindPollMs));
      wait_ms = Min(wait_ms, TimestampDifferenceMilliseconds(GetCurrentTimestamp(), next_poll));
      pg::guard([] { (void)pgstat_report_stat(false); });
      pg::wait_for_work_ms(Max(wait_ms, 1L));
      bound_lock_waits();
    } catch (const std::exception& e) {
      // A cancel, or anything else not caught deeper: logged, and the
      // worker goes on with a clean slate.
      pg::guard([] {
        if (IsTransactionState()) AbortCurrentTransaction();
        QueryCancelPending = false;
      });
      auto* pg_error = dynamic_cast<const PgError*>(&e);
      int code = pg_error != nullptr ? pg_error->sqlerrcode() : ERRCODE_INTERNAL_ERROR;
      pg::report(LOG, code, fmt::format("partheal worker: {}", e.what()));
      pg::back_off_ms(100);
    }
  }
}

}  // namespace

}  // namespace partheal::worker

extern "C" {
PGDLLEXPORT void partheal_worker_main(Datum arg);
void partheal_worker_main(Datum arg) {
  partheal::pg::enter(partheal::worker::worker_body, arg);
}
}
