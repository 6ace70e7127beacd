// partheal_manage, partheal_unmanage: the registration of a parent table.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

#include "registry/table_state.hpp"
#include "partitions/key_default.hpp"
#include "registry/registry.hpp"
#include "registry/shape.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/relation.hpp"
#include "pg/guc_level.hpp"
#include "pg/spi.hpp"
#include "pg/subxact.hpp"
#include "settings.hpp"
#include "worker/databases.hpp"

extern "C" {
#include "utils/syscache.h"
#include "access/htup_details.h"
#include "utils/fmgroids.h"
#include "parser/parse_func.h"
#include "nodes/makefuncs.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_attrdef.h"
#include "catalog/indexing.h"
#include "access/table.h"
#include "access/genam.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "tcop/utility.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/builtins.h"
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
  pg::guard([&] {
    if (!pg::compat::owns_relation(relid, GetUserId()))
      aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(rel->rd_rel->relkind),
                     RelationGetRelationName(rel));
  });
  return rel;
}

// A state whose table is no longer registered (a race with the worker's
// poll during partheal_unmanage can leave one) is forgotten, so the space
// goes back to tables that are.
void forget_unregistered() {
  registry::forget_all_but(registry::registered_tables());
}

// partheal_unmanage's shared state goes when its transaction commits: a
// ROLLBACK keeps the registration, so it must keep the stats and the
// watermark too. Each entry remembers the subtransaction level it was made
// at, so a rolled-back savepoint takes its own entries back.
struct PendingForget {
  Oid relid;
  int level;
};

std::vector<PendingForget>& pending_forgets() {
  static auto* pending = new std::vector<PendingForget>();
  return *pending;
}

void on_xact(XactEvent event, void*) noexcept {
  auto& pending = pending_forgets();
  if (event == XACT_EVENT_COMMIT) {
    for (const PendingForget& p : pending) {
      try {
        registry::forget(p.relid);
      } catch (...) {
        // Left for the worker's next poll, which forgets unregistered tables.
      }
    }
  }
  // A prepared transaction commits or rolls back elsewhere, later: its
  // forgets are left to the worker's poll, which forgets unregistered tables.
  if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE)
    pending.clear();
}

void on_subxact(SubXactEvent event, SubTransactionId, SubTransactionId, void*) noexcept {
  auto& pending = pending_forgets();
  int level = GetCurrentTransactionNestLevel();
  for (auto it = pending.begin(); it != pending.end();) {
    if (it->level < level) {
      ++it;
    } else if (event == SUBXACT_EVENT_ABORT_SUB) {
      it = pending.erase(it);
    } else {
      if (event == SUBXACT_EVENT_COMMIT_SUB) it->level = level - 1;
      ++it;
    }
  }
}

void forget_at_commit(Oid relid) {
  static bool registered = false;
  if (!registered) {
    pg::guard([] {
      RegisterXactCallback(on_xact, nullptr);
      RegisterSubXactCallback(on_subxact, nullptr);
    });
    registered = true;
  }
  pending_forgets().push_back(PendingForget{relid, GetCurrentTransactionNestLevel()});
}

// Registered again in the same transaction: its state stays.
void cancel_forget(Oid relid) {
  auto& pending = pending_forgets();
  for (auto it = pending.begin(); it != pending.end();)
    it = it->relid == relid ? pending.erase(it) : std::next(it);
}

// Writes (with a config) or deletes (without) the table's registration.
void write_config(const std::string& sql, Oid relid, std::optional<registry::Config> config) {
  Oid types[] = {OIDOID, INT8OID, INT4OID};
  Datum values[] = {ObjectIdGetDatum(relid), Int64GetDatum(config ? config->partition_size : 0),
                    Int32GetDatum(config ? config->mark_percent : 0)};
  char nulls[] = {' ', ' ', config && config->mark_percent == 0 ? 'n' : ' '};
  struct Work {
    const std::string* sql;
    pg::spi::Args args;
  } work{&sql, {config ? 3 : 1, types, values, nulls}};
  int level = pg::enter_safe_search_path();
  pg::spi::connect();
  registry::as_extension_owner(
      [](void* ctx) {
        auto* w = static_cast<Work*>(ctx);
        pg::spi::execute(*w->sql, w->args.count == 3 ? SPI_OK_INSERT : SPI_OK_DELETE, w->args);
      },
      &work);
  pg::spi::finish();
  pg::leave_guc_level(level);
  registry::registrations_changed();
}

// Sets the key column's default, as the caller (who owns the table), with
// partheal's own search_path. ALTER COLUMN SET DEFAULT locks the table
// ACCESS EXCLUSIVE for the rest of the transaction.
void set_key_default(const registry::TableShape& shape, const std::string& expression) {
  std::string sql =
      fmt::format("ALTER TABLE ONLY {}.{} ALTER COLUMN {} SET DEFAULT {}", pg::quoted(shape.schema),
                  pg::quoted(shape.name), pg::quoted(shape.key_column), expression);
  int level = pg::enter_safe_search_path();
  pg::spi::connect();
  pg::spi::execute(sql, SPI_OK_UTILITY);
  pg::spi::finish();
  pg::leave_guc_level(level);
}

// partheal_nextval(parent, sequence): plain INSERT and COPY rows then check
// the create-ahead mark as an append does.
void install_partheal_nextval(const registry::TableShape& shape) {
  if (shape.default_is_partheal_nextval) return;
  if (shape.identity_always || !shape.sequence_needs_acl)
    pg::fail(
        ERRCODE_FEATURE_NOT_SUPPORTED,
        fmt::format("column \"{}\" of \"{}\" is an identity column", shape.key_column, shape.name),
        "An identity column's default cannot be replaced.",
        "Declare the id bigserial, or keep nextval_default false.");
  // registry::describe() refused any other default: what is left is exactly
  // nextval(sequence), which partheal_unmanage can put back.
  set_key_default(shape,
                  fmt::format("{}.partheal_nextval({}, {})", registry::extension_schema_sql(),
                              partitions::regclass_literal(shape.relid),
                              partitions::regclass_literal(shape.sequence)));
}

// The tables among relid and its partitions whose column defaults call
// partheal_nextval, found through pg_depend: no other partition is opened
// or locked.
std::vector<Oid> tables_with_partheal_default(Oid relid) {
  const char* schema_name =
      pg::guard([&] { return get_namespace_name(registry::extension_schema()); });
  std::vector<Oid> defaults_of;  // adrelid of each dependent default
  std::vector<Oid> family;
  pg::guard([&] {
    Oid argtypes[2] = {REGCLASSOID, REGCLASSOID};
    Oid func = LookupFuncName(
        list_make2(makeString(pstrdup(schema_name)), makeString(pstrdup("partheal_nextval"))), 2,
        argtypes, true);
    if (!OidIsValid(func)) return;
    Relation depend = table_open(DependRelationId, AccessShareLock);
    ScanKeyData key[2];
    ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(ProcedureRelationId));
    ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(func));
    SysScanDesc scan = systable_beginscan(depend, DependReferenceIndexId, true, nullptr, 2, key);
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
      auto* dep = reinterpret_cast<Form_pg_depend>(GETSTRUCT(tuple));
      if (dep->classid != AttrDefaultRelationId) continue;
      ObjectAddress column = GetAttrDefaultColumnAddress(dep->objid);
      if (OidIsValid(column.objectId)) defaults_of.push_back(column.objectId);
    }
    systable_endscan(scan);
    table_close(depend, AccessShareLock);
  });
  if (defaults_of.empty()) return {};
  List* all = pg::guard([&] { return find_all_inheritors(relid, NoLock, nullptr); });
  ListCell* cell;
  foreach (cell, all) family.push_back(lfirst_oid(cell));
  std::vector<Oid> out;
  for (Oid table : family)
    if (std::find(defaults_of.begin(), defaults_of.end(), table) != defaults_of.end() &&
        std::find(out.begin(), out.end(), table) == out.end())
      out.push_back(table);
  return out;
}

// Back to the plain nextval of the same sequence, as serial declares it, on
// the parent and on every partition that carries partheal_nextval as a
// default of its own: partitions created by hand (PARTITION OF copies the
// parent's default), or by partheal before 0.3. Each table changed is
// locked ACCESS EXCLUSIVE until the transaction ends. Afterwards nothing of
// the table depends on partheal_nextval, so DROP EXTENSION works. Read from
// the catalog, not from the table's shape: a table that no longer fits
// partheal is put back too. A partition the caller does not own is left as
// it is, with a WARNING: partheal does nothing its caller could not do.
void restore_nextval(Oid relid) {
  std::vector<Oid> tables = tables_with_partheal_default(relid);
  int level = pg::enter_safe_search_path();
  pg::spi::connect();
  for (Oid table : tables) {
    if (!pg::guard([&] { return pg::compat::owns_relation(table, GetUserId()); })) {
      std::string label = pg::relation_label(table);
      std::string owner = pg::guard([&] {
        HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(table));
        Oid role = HeapTupleIsValid(tuple)
                       ? reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relowner
                       : InvalidOid;
        if (HeapTupleIsValid(tuple)) ReleaseSysCache(tuple);
        return std::string(GetUserNameFromId(role, true) ? GetUserNameFromId(role, true) : "?");
      });
      const char* l = label.c_str();
      const char* o = owner.c_str();
      pg::guard([&] {
        ereport(WARNING,
                (errmsg("partition %s keeps partheal_nextval as its id default: it is owned by "
                        "role \"%s\"",
                        l, o),
                 errhint("Its owner can give it the plain nextval default with ALTER TABLE ONLY "
                         "... ALTER COLUMN ... SET DEFAULT; until then DROP EXTENSION partheal "
                         "fails on it.")));
      });
      continue;
    }
    for (const std::string& sql : partitions::restore_nextval_sql(table))
      pg::spi::execute(sql, SPI_OK_UTILITY);
  }
  pg::spi::finish();
  pg::leave_guc_level(level);
}

}  // namespace

}  // namespace partheal::manage

using namespace partheal;

PARTHEAL_SQL_FUNCTION(partheal_manage) {
  settings::require_preloaded();
  Relation rel = manage::open_owned(fcinfo, "partheal_manage()");
  if (PG_ARGISNULL(1))
    pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, "partition_size must not be NULL", {},
             "Give the number of ids each partition holds, for example 100000.");
  int64 size = PG_GETARG_INT64(1);
  if (size <= 0)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("partition_size must be greater than zero, not {}", size), {},
             "Give the number of ids each partition holds, for example 100000.");
  // NULL turns create-ahead off for the table; 0 stands for it inside.
  int percent = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT32(2);
  if (!PG_ARGISNULL(2) && (percent < 1 || percent > 99))
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("mark_percent must be between 1 and 99, not {}", percent), {},
             "The next partition is created when ids reach this percent of the current one; "
             "the default is 80, and NULL turns create-ahead off.");
  // NULL (the default) leaves the id default as it is; 0.1's declaration
  // has no fourth argument at all.
  std::optional<bool> nextval_default;
  if (PG_NARGS() > 3 && !PG_ARGISNULL(3)) nextval_default = PG_GETARG_BOOL(3);
  registry::TableShape shape = registry::describe(rel);
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
  if (shape.has_default_partition)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("\"{}\" has a DEFAULT partition", shape.name),
             "Rows without a partition of their own go to the DEFAULT partition, so no partition "
             "would ever be missing, and every new partition would have to scan it.",
             "Detach the DEFAULT partition before registering the table.");
  if (shape.sequence_increment < 0)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("the id sequence of \"{}\" descends", shape.name),
             "partheal creates partitions above the ids in use; a descending sequence needs "
             "them below.",
             "Use an ascending sequence.");
  pg::guard([&] { relation_close(rel, NoLock); });

  // Room in shared memory is checked before anything is written, so a table
  // beyond partheal.max_tables is refused now rather than missed later.
  manage::cancel_forget(shape.relid);
  bool tracked = registry::track(shape.relid, size, percent, shape.key_max);
  if (!tracked) {
    manage::forget_unregistered();
    tracked = registry::track(shape.relid, size, percent, shape.key_max);
  }
  if (!tracked)
    pg::fail(
        ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
        fmt::format("partheal.max_tables ({}) tables are managed already", settings::max_tables),
        "Each managed table has a watermark in shared memory, sized at server start.",
        "Raise partheal.max_tables and restart the server, or unmanage unused tables.");
  std::string sql = fmt::format(
      "INSERT INTO {}.partheal_config (parent, partition_size, mark_percent) VALUES ($1, $2, $3) "
      "ON CONFLICT (parent) DO UPDATE SET partition_size = EXCLUDED.partition_size, "
      "mark_percent = EXCLUDED.mark_percent",
      registry::extension_schema_sql());
  manage::write_config(sql, shape.relid, registry::Config{size, percent});
  if (nextval_default == true)
    manage::install_partheal_nextval(shape);
  else if (nextval_default == false)
    manage::restore_nextval(shape.relid);
  // The worker creates ahead for writers that never call partheal_append,
  // so it runs from registration on. Registration itself does not need it.
  try {
    worker::want_worker(MyDatabaseId, false);
  } catch (const PgError& e) {
    const char* text = e.what();
    pg::guard([&] {
      ereport(WARNING, (errcode(e.sqlerrcode()), errmsg("%s", text),
                        errdetail("Partitions are created when rows need them, not ahead."),
                        errhint("Raise max_worker_processes and restart the server.")));
    });
  }
  PG_RETURN_VOID();
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
