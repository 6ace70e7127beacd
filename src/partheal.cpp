// _PG_init: the GUCs, the shared memory and the hooks. The library owns
// shared memory and a background worker, so it must be preloaded.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <new>
#include <stdexcept>
#include <string>

#include "ahead/catch_up.hpp"
#include "drain/default_drain.hpp"
#include "retention/retention.hpp"
#include "ahead/premake.hpp"
#include "manage/drop_extension.hpp"
#include "manage/manage.hpp"
#include "errors.hpp"
#include "gate/gate.hpp"
#include "pg/boundary.hpp"
#include "registry/registry.hpp"
#include "registry/table_state.hpp"
#include "settings.hpp"
#include "worker/database_ddl.hpp"
#include "worker/databases.hpp"
#include "worker/launcher.hpp"
#include "worker/scheduler.hpp"
#include "worker/shmem.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
}

extern "C" {
PG_MODULE_MAGIC;
}

namespace partheal::settings {

int max_retries = 3;
int ddl_lock_timeout_ms = 2000;
int heal_wait_timeout_ms = 10000;
int max_tables = 1000;
int naptime_ms = 1000;
int ahead_seconds = 10;
int max_ahead_partitions = 16;
int attach_lock_timeout_ms = 200;
int attach_lock_attempts = 5;
bool drain_default = true;
int drain_snapshot_wait_ms = 60000;
bool retention = true;
bool heal_inserts = true;

int attach_lock_budget_ms() {
  return std::max(1, std::min(attach_lock_timeout_ms, DeadlockTimeout / 2));
}

int detach_wait_budget_ms() {
  return 2 * attach_lock_budget_ms();
}

int detach_wait_lock_timeout_ms() {
  return std::max(attach_lock_budget_ms(), std::min(detach_wait_budget_ms(), DeadlockTimeout / 2));
}

namespace {
bool loaded_at_startup = false;
}

bool preloaded() {
  return loaded_at_startup;
}

void require_preloaded() {
  if (loaded_at_startup) return;
  pg::fail(errors::kNotPreloaded, "partheal must be loaded via shared_preload_libraries",
           "partheal keeps shared memory and starts background workers, which only a library "
           "loaded at server start can do.",
           "Add partheal to shared_preload_libraries in postgresql.conf and restart the server.");
}

}  // namespace partheal::settings

namespace {

shmem_request_hook_type previous_shmem_request = nullptr;
shmem_startup_hook_type previous_shmem_startup = nullptr;

void on_shmem_request() {
  if (previous_shmem_request) previous_shmem_request();
  partheal::pg::entry([] {
    partheal::worker::request_shared_memory();
    partheal::registry::request_shared_memory();
  });
}

void on_shmem_startup() {
  if (previous_shmem_startup) previous_shmem_startup();
  partheal::pg::entry([] {
    partheal::worker::init_shared_memory();
    partheal::registry::init_shared_memory();
  });
}

// Shared memory is sized at server start: only a preloaded library may
// define this (defining it later is FATAL).
void define_postmaster_gucs() {
  DefineCustomIntVariable("partheal.max_tables",
                          "Managed tables, across all databases, that shared memory has room for.",
                          nullptr, &partheal::settings::max_tables, 1000, 1, 1000000,
                          PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
}

void define_gucs() {
  using partheal::settings::ddl_lock_timeout_ms;
  using partheal::settings::heal_wait_timeout_ms;
  using partheal::settings::max_retries;
  DefineCustomIntVariable(
      "partheal.max_retries", "Heals allowed beyond the first before an append gives up (PH001).",
      nullptr, &max_retries, 3, 0, 100, PGC_USERSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("partheal.ddl_lock_timeout",
                          "lock_timeout for the worker's advisory lock and partition DDL.", nullptr,
                          &ddl_lock_timeout_ms, 2000, 1, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, nullptr,
                          nullptr, nullptr);
  DefineCustomIntVariable("partheal.heal_wait_timeout",
                          "How long an append waits for the worker to create a partition (PH002).",
                          nullptr, &heal_wait_timeout_ms, 10000, 1, INT_MAX, PGC_USERSET,
                          GUC_UNIT_MS, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("partheal.attach_lock_timeout",
                          "How long an attach waits for all its locks, per attempt; never above "
                          "half of deadlock_timeout.",
                          nullptr, &partheal::settings::attach_lock_timeout_ms, 200, 1, INT_MAX,
                          PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("partheal.attach_lock_attempts",
                          "Attempts an attach makes at its locks before it gives way.", nullptr,
                          &partheal::settings::attach_lock_attempts, 5, 1, 100, PGC_USERSET, 0,
                          nullptr, nullptr, nullptr);
  DefineCustomBoolVariable("partheal.drain_default",
                           "Whether the worker moves rows out of time-keyed tables' DEFAULT "
                           "partitions into their windows; off turns the drain off for every "
                           "table, on leaves it to each registration's drain_default.",
                           nullptr, &partheal::settings::drain_default, true, PGC_SIGHUP, 0,
                           nullptr, nullptr, nullptr);
  DefineCustomIntVariable("partheal.drain_snapshot_wait",
                          "How long the drain holds a window's move back for transactions whose "
                          "snapshots are older than the move, before it moves the rows anyway.",
                          nullptr, &partheal::settings::drain_snapshot_wait_ms, 60000, 0, INT_MAX,
                          PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable("partheal.retention",
                           "Whether the worker detaches and drops the partitions past each "
                           "registration's retention; off keeps every partition, as after "
                           "restoring an old backup or a jump of the clock.",
                           nullptr, &partheal::settings::retention, true, PGC_SIGHUP, 0, nullptr,
                           nullptr, nullptr);
  DefineCustomIntVariable("partheal.naptime",
                          "How often the worker reads sequence positions to create ahead for "
                          "writers that do not call partheal_append.",
                          nullptr, &partheal::settings::naptime_ms, 1000, 10, 3600000, PGC_SIGHUP,
                          GUC_UNIT_MS, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "partheal.ahead_seconds",
      "Seconds of traffic, at the recent peak rate, that the worker keeps partitions ahead for.",
      nullptr, &partheal::settings::ahead_seconds, 10, 1, 86400, PGC_SIGHUP, GUC_UNIT_S, nullptr,
      nullptr, nullptr);
  DefineCustomIntVariable("partheal.max_ahead_partitions",
                          "The most partitions the worker keeps ahead of a table's position.",
                          nullptr, &partheal::settings::max_ahead_partitions, 16, 1, 10000,
                          PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable("partheal.heal_inserts",
                           "Whether a plain INSERT into a managed table heals a missing "
                           "partition in the same statement; off leaves the row to "
                           "PostgreSQL's own \"no partition of relation\" error.",
                           nullptr, &partheal::settings::heal_inserts, true, PGC_USERSET, 0,
                           nullptr, nullptr, nullptr);
  // Only after every variable exists: reserving the prefix throws away the
  // values of any partheal.* setting not defined yet.
  if (process_shared_preload_libraries_in_progress) define_postmaster_gucs();
  MarkGUCPrefixReserved("partheal");
}

}  // namespace

extern "C" {

PGDLLEXPORT void _PG_init(void);
void _PG_init(void) {
  define_gucs();
  partheal::registry::install_invalidation_callback();
  if (!process_shared_preload_libraries_in_progress) return;
  partheal::settings::loaded_at_startup = true;
  previous_shmem_request = shmem_request_hook;
  shmem_request_hook = on_shmem_request;
  previous_shmem_startup = shmem_startup_hook;
  shmem_startup_hook = on_shmem_startup;
  partheal::worker::install_database_ddl_hook();
  partheal::manage::install_drop_extension_hook();
  // Plain INSERTs heal only where the worker that makes partitions runs.
  partheal::gate::install();
  // The jobs of the worker's scheduler, in the order a round runs their
  // steps: registered here, so that worker/ needs nothing from ahead/,
  // drain/ or retention/.
  partheal::worker::register_job(&partheal::ahead::catch_up_job());
  partheal::worker::register_job(&partheal::drain::default_drain_job());
  partheal::worker::register_job(&partheal::retention::retention_job());
  partheal::manage::set_make_ahead(partheal::ahead::make_premade);
  partheal::worker::register_launcher();
}

}  // extern "C"

// Fails at CREATE EXTENSION when the library was not preloaded. Otherwise
// the database wants a worker from now on: a restore creates the extension
// and its registrations without ever calling partheal_manage.
PARTHEAL_SQL_FUNCTION(partheal_require_preload) {
  partheal::settings::require_preloaded();
  (void)fcinfo;
  partheal::worker::extension_created();
  PG_RETURN_VOID();
}

// Raises a C++ exception of the named kind, so the tests can prove that each
// one reaches the client as an ERROR with a fitting SQLSTATE, never a crash.
PARTHEAL_SQL_FUNCTION(partheal_boundary_selftest) {
  std::string kind = partheal::pg::guard([&] { return text_to_cstring(PG_GETARG_TEXT_PP(0)); });
  if (kind == "bad_alloc") throw std::bad_alloc();
  if (kind == "fmt") (void)fmt::format(fmt::runtime("{:d}"), "not a number");
  if (kind == "runtime_error") throw std::runtime_error("a runtime_error from C++");
  if (kind == "unknown") throw 42;
  if (kind == "inside_guard")
    partheal::pg::guard([] {
      // guard-ok: the test of a C++ exception carried out of a guard
      throw std::runtime_error("thrown inside a guard");
    });
  if (kind == "copy_fails") partheal::pg::fail_next_error_copy_for_test();
  if (kind == "postgres" || kind == "copy_fails")
    partheal::pg::guard([] {
      ereport(ERROR, (errcode(ERRCODE_DIVISION_BY_ZERO), errmsg("a PostgreSQL error"),
                      errdetail("raised under a guard"), errhint("and raised again unchanged")));
    });
  PG_RETURN_VOID();
}
