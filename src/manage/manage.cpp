// partheal_manage, partheal_unmanage: the registration of a parent table.
#include <fmt/format.h>

#include <iterator>
#include <optional>
#include <vector>

#include "manage/forget_internal.hpp"
#include "manage/due_windows_internal.hpp"
#include "manage/id_default_internal.hpp"
#include "manage/manage.hpp"
#include "manage/summary_internal.hpp"
#include "manage/time_internal.hpp"
#include "registry/table_state.hpp"
#include "registry/registry.hpp"
#include "registry/shape.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/compat.hpp"
#include "pg/relation.hpp"
#include "pg/own_sql.hpp"
#include "pg/report.hpp"
#include "pg/spi.hpp"
#include "settings.hpp"
#include "worker/databases.hpp"

extern "C" {
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
}

namespace partheal::manage {

namespace {

// Opens the parent and checks that the caller owns it: the owner alone may
// decide that partheal creates partitions in it.
Relation open_owned(FunctionCallInfo fcinfo, const char* function) {
  if (PG_ARGISNULL(0))
    pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, "parent must not be NULL", {},
             "Name a partitioned table, for example 'public.events'.");
  Oid relid = PG_GETARG_OID(0);
  // Before the shared-memory slot is taken or the config written.
  pg::guard([&] { PreventCommandIfReadOnly(function); });
  Relation rel = pg::open_existing(relid, AccessShareLock);
  // Citus copies neither partheal_config's rows nor the DDL of a worker
  // node's partheal worker to the other nodes: a registration made here
  // would be this node's alone, and its partitions could not be made.
  citus::Table::of(relid).refuse_on_worker_node(fmt::format("{} runs", function),
                                                "Run it on the coordinator.");
  pg::guard([&] {
    if (!pg::compat::owns_relation(relid, GetUserId()))
      aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(rel->rd_rel->relkind),
                     RelationGetRelationName(rel));
  });
  return rel;
}

MakeAhead make_ahead = nullptr;

// Writes (with a config) or deletes (without) the table's registration.
void write_config(const std::string& sql, Oid relid, std::optional<registry::Config> config,
                  int columns = 11) {
  Interval interval{};
  Interval retention{};
  Interval reach{};
  std::string zone = config ? config->time_zone : std::string();
  Datum zone_text = 0;
  if (config) {
    interval.month = config->interval_months;
    interval.day = config->interval_days;
    interval.time = config->interval_us;
    retention.month = config->retention_months;
    retention.day = config->retention_days;
    retention.time = config->retention_us;
    reach.month = config->drain_reach_months;
    reach.day = config->drain_reach_days;
    reach.time = config->drain_reach_us;
    const char* z = zone.c_str();
    zone_text = pg::guard([&] { return CStringGetTextDatum(z); });
  }
  const bool by_time = config && config->by_time;
  Oid types[] = {OIDOID,  INT8OID,     INT4OID, INT4OID, INTERVALOID, TEXTOID,
                 BOOLOID, INTERVALOID, BOOLOID, INT8OID, INTERVALOID};
  Datum values[] = {ObjectIdGetDatum(relid),
                    Int64GetDatum(config ? config->partition_size : 0),
                    Int32GetDatum(config ? config->mark_percent : 0),
                    Int32GetDatum(config ? config->premake : 0),
                    IntervalPGetDatum(&interval),
                    zone_text,
                    BoolGetDatum(!config || config->drain_default),
                    IntervalPGetDatum(&retention),
                    BoolGetDatum(config && config->retention_keep_table),
                    Int64GetDatum(config ? config->retention_ids : 0),
                    IntervalPGetDatum(&reach)};
  char nulls[] = {' ',
                  by_time ? 'n' : ' ',
                  config && config->mark_percent == 0 ? 'n' : ' ',
                  ' ',
                  by_time ? ' ' : 'n',
                  by_time ? ' ' : 'n',
                  ' ',
                  config && config->has_retention() ? ' ' : 'n',
                  ' ',
                  config && config->retention_ids > 0 ? ' ' : 'n',
                  config && config->has_drain_reach() ? ' ' : 'n'};
  struct Work {
    const std::string* sql;
    pg::spi::Args args;
  } work{&sql, {config ? columns : 1, types, values, nulls}};
  pg::with_own_sql({}, [&] {
    registry::as_extension_owner(
        [](void* ctx) {
          auto* w = static_cast<Work*>(ctx);
          pg::spi::execute(*w->sql, w->args.count > 1 ? SPI_OK_INSERT : SPI_OK_DELETE, w->args);
        },
        &work);
  });
  registry::registrations_changed();
  registry::table_registration_changed(relid);
}

// partheal_manage's arguments after the parent, checked.
struct Arguments {
  int64 size = 0;
  int percent = 0;
  std::optional<bool> nextval_default;
  int premake = 4;
  int64 retention = 0;  // ids; 0: none
  std::optional<bool> keep_table;
};

int premake_argument(FunctionCallInfo fcinfo, int n) {
  if (PG_NARGS() <= n) return 4;  // 0.4's declaration has no premake
  if (PG_ARGISNULL(n))
    pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, "premake must not be NULL", {},
             "Give how many partitions to keep made ahead, for example 4 (the default).");
  int premake = PG_GETARG_INT32(n);
  if (premake < 0 || premake > 1000)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("premake must be between 0 and 1000, not {}", premake), {},
             "premake is how many partitions are kept made ahead; the default is 4.");
  return premake;
}

Arguments arguments(FunctionCallInfo fcinfo) {
  Arguments a;
  if (PG_ARGISNULL(1))
    pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, "partition_size must not be NULL", {},
             "Give the number of ids each partition holds, for example 100000.");
  a.size = PG_GETARG_INT64(1);
  if (a.size <= 0)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("partition_size must be greater than zero, not {}", a.size), {},
             "Give the number of ids each partition holds, for example 100000.");
  // NULL turns create-ahead off for the table; 0 stands for it inside.
  a.percent = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT32(2);
  if (!PG_ARGISNULL(2) && (a.percent < 1 || a.percent > 99))
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("mark_percent must be between 1 and 99, not {}", a.percent), {},
             "The next partition is created when ids reach this percent of the current one; "
             "the default is 80, and NULL turns create-ahead off.");
  // NULL (the default) leaves the id default as it is; 0.1's declaration
  // has no fourth argument at all.
  if (PG_NARGS() > 3 && !PG_ARGISNULL(3)) a.nextval_default = PG_GETARG_BOOL(3);
  a.premake = premake_argument(fcinfo, 4);
  // 0.6's retention, in ids, and retention_keep_table.
  if (PG_NARGS() > 5 && !PG_ARGISNULL(5)) {
    a.retention = PG_GETARG_INT64(5);
    if (a.retention <= 0)
      pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
               fmt::format("retention must be greater than zero, not {}", a.retention),
               "Partitions whose upper bound is at or below the sequence position minus "
               "retention ids are detached.",
               "Give how many ids to keep below the position, for example 10000000, or NULL to "
               "keep every partition.");
  }
  // NULL keeps the registration's (false for a new one).
  if (PG_NARGS() > 6 && !PG_ARGISNULL(6)) a.keep_table = PG_GETARG_BOOL(6);
  return a;
}

// retention_keep_table as given, or else as the table is registered (false
// for a new registration).
bool keep_table_of(Oid relid, std::optional<bool> given) {
  if (given) return *given;
  std::optional<registry::Config> current = registry::configured(relid);
  return current && current->retention_keep_table;
}

// What registry::describe() accepts as a shape but partheal_manage refuses
// to register.
void refuse_unmanageable(Relation rel, const registry::TableShape& shape) {
  if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED, fmt::format("\"{}\" is a temporary table", shape.name),
             "The worker, which creates partitions ahead and for heals, cannot see another "
             "session's temporary tables, and the registration would outlive the table's session.",
             "Register a permanent or unlogged table.");
  if (rel->rd_rel->relispartition) {
    const char* parent =
        pg::guard([&] { return get_rel_name(get_partition_parent(shape.relid, true)); });
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("\"{}\" is a partition of \"{}\"", shape.name,
                         parent != nullptr ? parent : "?"),
             "partheal creates partitions of the table it manages; a partition's own partitions "
             "would be attached outside the range its parent routes to it.",
             "Register the top-level table.");
  }
  if (shape.has_default_partition() && !shape.key_is_time)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("\"{}\" has a DEFAULT partition", shape.name),
             "Rows without a partition of their own go to the DEFAULT partition, so no partition "
             "would ever be missing, and every new partition would have to scan it.",
             "Detach the DEFAULT partition before registering the table.");
  if (shape.sequence != InvalidOid && shape.sequence_increment < 0)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("the id sequence of \"{}\" descends", shape.name),
             "partheal creates partitions above the ids in use; a descending sequence needs "
             "them below.",
             "Use an ascending sequence.");
}

// Room in shared memory is checked before anything is written, so a table
// beyond partheal.max_tables is refused now rather than missed later.
void track_or_fail(const registry::TableShape& shape, int64 size, int percent) {
  // size: the key spec's fingerprint (the partition size, for ids)
  cancel_forget(shape.relid);
  bool tracked = registry::track(shape.relid, size, percent, shape.key_max);
  if (!tracked) {
    forget_unregistered();
    tracked = registry::track(shape.relid, size, percent, shape.key_max);
  }
  if (tracked) registry::mark_registering(shape.relid);
  if (!tracked)
    pg::fail(
        ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
        fmt::format("partheal.max_tables ({}) tables are managed already", settings::max_tables),
        "Each managed table has a watermark in shared memory, sized at server start.",
        "Raise partheal.max_tables and restart the server, or unmanage unused tables.");
}

// The worker creates ahead for writers that never call partheal_append,
// so it runs from registration on. Registration itself does not need it.
void want_worker_or_warn() {
  try {
    worker::want_worker(MyDatabaseId, false);
  } catch (const PgError& e) {
    pg::report(WARNING, e.sqlerrcode(), e.what(),
               {"Partitions are created when rows need them, not ahead.",
                "Raise max_worker_processes and restart the server."});
  }
}

}  // namespace

}  // namespace partheal::manage

namespace partheal::manage {

namespace {

// The part both forms share once their arguments are checked: the shared
// state and the config row.
void register_table(const registry::TableShape& shape, const registry::Config& config) {
  track_or_fail(shape, registry::ManagedTable{shape, config}.key_spec().fingerprint(),
                config.mark_percent);
  if (!registry::config_has_time_columns()) {
    // The library is 0.5's, the extension's objects still 0.4's.
    if (config.by_time)
      pg::fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
               "partheal's objects in this database are older than its library",
               "partheal_config has no columns for a time-keyed registration yet.",
               "Run ALTER EXTENSION partheal UPDATE.");
    std::string old_sql = fmt::format(
        "INSERT INTO {}.partheal_config (parent, partition_size, mark_percent) VALUES ($1, $2, "
        "$3) ON CONFLICT (parent) DO UPDATE SET partition_size = EXCLUDED.partition_size, "
        "mark_percent = EXCLUDED.mark_percent",
        registry::extension_schema_sql());
    write_config(old_sql, shape.relid, config, 3);
    return;
  }
  // A 0.5 catalog has no drain_default or retention_ids ($7 and $10 go
  // unused), one older than 0.10 no drain_reach ($11); all have the time
  // form's retention columns.
  const bool drain_column = registry::config_has_drain_column();
  const bool reach_column = registry::config_has_drain_reach_column();
  std::string sql = fmt::format(
      "INSERT INTO {}.partheal_config (parent, partition_size, mark_percent, premake, "
      "partition_interval, time_zone, retention, retention_keep_table{}{}) "
      "VALUES ($1, $2, $3, $4, $5, $6, $8, $9{}{}) "
      "ON CONFLICT (parent) DO UPDATE SET partition_size = EXCLUDED.partition_size, "
      "mark_percent = EXCLUDED.mark_percent, premake = EXCLUDED.premake, "
      "partition_interval = EXCLUDED.partition_interval, time_zone = EXCLUDED.time_zone, "
      "retention = EXCLUDED.retention, retention_keep_table = EXCLUDED.retention_keep_table{}{}",
      registry::extension_schema_sql(), drain_column ? ", drain_default, retention_ids" : "",
      reach_column ? ", drain_reach" : "", drain_column ? ", $7, $10" : "",
      reach_column ? ", $11" : "",
      drain_column
          ? ", drain_default = EXCLUDED.drain_default, retention_ids = EXCLUDED.retention_ids"
          : "",
      reach_column ? ", drain_reach = EXCLUDED.drain_reach" : "");
  write_config(sql, shape.relid, config, reach_column ? 11 : 10);
}

void make_first_ahead(const registry::TableShape& shape, const registry::Config& config) {
  if (make_ahead != nullptr) make_ahead(registry::ManagedTable{shape, config});
}

}  // namespace

void set_make_ahead(MakeAhead make) {
  make_ahead = make;
}

}  // namespace partheal::manage

using namespace partheal;

PARTHEAL_SQL_FUNCTION(partheal_manage) {
  settings::require_preloaded();
  Relation rel = manage::open_owned(fcinfo, "partheal_manage()");
  manage::Arguments a = manage::arguments(fcinfo);
  registry::TableShape shape = registry::describe(rel);
  manage::refuse_time_key_for_ids(shape);
  manage::refuse_unmanageable(rel, shape);
  pg::guard([&] { relation_close(rel, NoLock); });
  const std::vector<Oid> before = manage::attached_now(shape.relid);

  registry::Config config;
  config.partition_size = a.size;
  config.mark_percent = a.percent;
  config.premake = a.premake;
  config.retention_ids = a.retention;
  config.retention_keep_table = manage::keep_table_of(shape.relid, a.keep_table);
  if (a.retention > 0 && shape.sequence == InvalidOid)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("\"{}\" has no id sequence to count retention from", shape.name),
             "An id-keyed retention keeps the partitions within retention ids below the "
             "sequence position.",
             "Give the id column a sequence (bigserial or an identity), or leave retention "
             "NULL.");
  manage::register_table(shape, config);
  if (a.nextval_default == true)
    manage::install_partheal_nextval(shape);
  else if (a.nextval_default == false)
    manage::restore_nextval(shape.relid);
  manage::make_first_ahead(shape, config);
  const size_t due = manage::say_due_windows(shape, config);
  manage::want_worker_or_warn();
  return manage::summary_datum(manage::registration_summary(shape, config, before, due));
}

PARTHEAL_SQL_FUNCTION(partheal_manage_time) {
  settings::require_preloaded();
  Relation rel = manage::open_owned(fcinfo, "partheal_manage()");
  registry::TableShape shape = registry::describe(rel);
  bool drain_given = false, keep_given = false, reach_given = false;
  registry::Config config =
      manage::time_config(fcinfo, shape, &drain_given, &keep_given, &reach_given);
  if (!keep_given) config.retention_keep_table = manage::keep_table_of(shape.relid, std::nullopt);
  manage::refuse_unmanageable(rel, shape);
  pg::guard([&] { relation_close(rel, NoLock); });
  const std::vector<Oid> before = manage::attached_now(shape.relid);
  // drain_default NULL keeps the registration's; a catalog older than 0.6
  // has no switch, and its tables are not drained until it is updated.
  if (!registry::config_has_drain_column()) {
    config.drain_default = false;
  } else if (!drain_given) {
    std::optional<registry::Config> current = registry::configured(shape.relid);
    if (current && current->by_time) config.drain_default = current->drain_default;
  }
  // drain_reach NULL keeps the registration's too (a 0.10 catalog's only).
  if (!reach_given) {
    std::optional<registry::Config> current = registry::configured(shape.relid);
    if (current && current->by_time) {
      config.drain_reach_months = current->drain_reach_months;
      config.drain_reach_days = current->drain_reach_days;
      config.drain_reach_us = current->drain_reach_us;
    }
  }
  manage::register_table(shape, config);
  if (shape.has_default_partition() && registry::ManagedTable{shape, config}.drains_default())
    pg::report(NOTICE, 0,
               fmt::format("\"{}\" has a DEFAULT partition: rows without a window of their own "
                           "go there, and the worker moves them into their windows",
                           shape.name),
               {config.has_retention()
                    ? "The worker makes now's window and premake after it, and the windows of "
                      "rows in DEFAULT back to the retention horizon (1,000 windows at most), "
                      "each attached past DEFAULT with partheal_attach_window's locks."
                    : fmt::format("The worker makes now's window and premake after it, and the "
                                  "windows of rows in DEFAULT back to {} before now (1,000 "
                                  "windows at most), each attached past DEFAULT with "
                                  "partheal_attach_window's locks.",
                                  manage::drain_reach_text(config)),
                "Give drain_default => false to leave the rows in DEFAULT."});
  else if (shape.has_default_partition())
    pg::report(WARNING, 0,
               fmt::format("\"{}\" has a DEFAULT partition: rows without a window of their own "
                           "go there, and partheal makes no windows while it is attached",
                           shape.name),
               {config.drain_default && registry::config_has_drain_column()
                    ? "partheal.drain_default is off on this server: with it on, the worker "
                      "would move the rows into their windows."
                    : std::string(),
                "Move its rows into windows with partheal_partition_data and detach it, and "
                "partheal makes the windows from then on."});
  manage::make_first_ahead(shape, config);
  const size_t due = manage::say_due_windows(shape, config);
  manage::want_worker_or_warn();
  return manage::summary_datum(manage::registration_summary(shape, config, before, due));
}

PARTHEAL_SQL_FUNCTION(partheal_unmanage) {
  settings::require_preloaded();
  Relation rel = manage::open_owned(fcinfo, "partheal_unmanage()");
  Oid relid = RelationGetRelid(rel);
  std::string name = RelationGetRelationName(rel);
  pg::guard([&] { relation_close(rel, NoLock); });
  if (!registry::configured(relid))
    pg::fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
             fmt::format("\"{}\" is not managed by partheal", name));
  std::string sql = fmt::format("DELETE FROM {}.partheal_config WHERE parent = $1",
                                registry::extension_schema_sql());
  manage::write_config(sql, relid, std::nullopt);
  manage::restore_nextval(relid);
  manage::forget_at_commit(relid);
  PG_RETURN_VOID();
}
