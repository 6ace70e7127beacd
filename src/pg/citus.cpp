#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "pg/citus.hpp"
#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/guc_level.hpp"
#include "pg/own_sql.hpp"
#include "pg/security.hpp"

extern "C" {
#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_sequence.h"
#include "access/htup_details.h"
#include "utils/syscache.h"
#include "utils/fmgroids.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/proclang.h"
#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

namespace partheal::pg::citus {

bool installed() {
  return pg::guard([] { return get_extension_oid("citus", true) != InvalidOid; });
}

std::string text_value(uint64 row, int col) {
  std::optional<Datum> d = spi::value(row, col);
  if (!d) return {};
  const char* s = pg::guard([&] { return TextDatumGetCString(*d); });
  return s;
}

namespace {

// Citus's advisory lock classes (locktag_field4), as its resource_lock.h
// numbers them, and what each serializes.
const char* lock_class_name(uint16 cls) {
  switch (cls) {
    case 4:
      return "shard metadata";
    case 5:
      return "shard";
    case 6:
      return "job";
    case 7:
      return "rebalance colocation";
    case 8:
      return "colocated shards metadata";
    case 9:
      return "operations";
    case 10:
      return "cleanup operation";
    case 13:
      return "rebalance placement colocation";
    case 14:
      return "background task";
    case 15:
      return "global DDL serialization";
    case 16:
      return "shard move";
    default:
      return nullptr;
  }
}

}  // namespace

Role role() {
  if (!installed()) return Role::kNone;
  return with_own_sql({}, [] {
    spi::execute("SELECT groupid FROM pg_catalog.pg_dist_local_group", SPI_OK_SELECT);
    std::optional<Datum> group = spi::value(0, 1);
    return group && DatumGetInt32(*group) != 0 ? Role::kWorker : Role::kCoordinator;
  });
}

// A scan under the catalog snapshot, not SQL: a statement's snapshot,
// taken before a create_distributed_table that committed while the
// statement waited for its lock (or a REPEATABLE READ transaction's),
// would not see the row, and a table distributed meanwhile would be taken
// for a plain one (its rows written into the coordinator's shells).
std::optional<DistRow> dist_row(Oid relid) {
  if (!installed()) return std::nullopt;
  DistRow row;
  const char* partkey = nullptr;
  bool found = pg::guard([&] {
    Oid catalog = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
    if (!OidIsValid(catalog)) return false;
    Relation rel = table_open(catalog, AccessShareLock);
    AttrNumber column = get_attnum(catalog, "logicalrelid");
    ScanKeyData key;
    ScanKeyInit(&key, column, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
    SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, nullptr, 1, &key);
    HeapTuple tuple = systable_getnext(scan);
    bool any = HeapTupleIsValid(tuple);
    if (any) {
      TupleDesc desc = RelationGetDescr(rel);
      bool isnull = false;
      Datum d = compat::getattr(tuple, get_attnum(catalog, "partmethod"), desc, &isnull);
      row.method = isnull ? 0 : DatumGetChar(d);
      d = compat::getattr(tuple, get_attnum(catalog, "repmodel"), desc, &isnull);
      row.repmodel = isnull ? 0 : DatumGetChar(d);
      d = compat::getattr(tuple, get_attnum(catalog, "colocationid"), desc, &isnull);
      row.colocation = isnull ? 0 : DatumGetUInt32(d);
      d = compat::getattr(tuple, get_attnum(catalog, "partkey"), desc, &isnull);
      partkey = isnull ? nullptr : TextDatumGetCString(d);
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return any;
  });
  if (!found) return std::nullopt;
  if (partkey != nullptr) row.key = partkey;
  return row;
}

bool is_citus_table(Oid relid) {
  return dist_row(relid).has_value();
}

std::string coordinator_address() {
  if (!installed()) return {};
  return with_own_sql({}, [] {
    if (spi::execute("SELECT pg_catalog.format('%s:%s', nodename, nodeport) FROM "
                     "pg_catalog.pg_dist_node WHERE groupid OPERATOR(pg_catalog.=) 0 AND noderole "
                     "OPERATOR(pg_catalog.=) 'primary' ORDER BY nodeid LIMIT 1",
                     SPI_OK_SELECT, {}, true) == 0)
      return std::string();
    return text_value(0, 1);
  });
}

std::string run_on_coordinator(const std::string& command) {
  struct Answer {
    bool any = false;
    bool ok = false;
    std::string result;
  };
  Answer answer = with_own_sql({}, [&] {
    set_local("citus.node_connection_timeout", kNodeConnectTimeoutMs);
    Oid types[] = {TEXTOID};
    const char* text = command.c_str();
    Datum values[] = {pg::guard([&] { return CStringGetTextDatum(text); })};
    Answer a;
    if (spi::execute("SELECT success, result FROM pg_catalog.run_command_on_coordinator($1)",
                     SPI_OK_SELECT, {1, types, values, nullptr}) == 0)
      return a;
    std::optional<Datum> ok = spi::value(0, 1);
    a.any = true;
    a.ok = ok && DatumGetBool(*ok);
    a.result = text_value(0, 2);
    return a;
  });
  if (!answer.any)
    pg::fail(errors::kNotOnCoordinator, "this worker node knows no coordinator",
             "Citus's metadata on this node has no primary node in group 0.",
             "Run SELECT citus_set_coordinator_host('host', port) on the coordinator.");
  if (!answer.ok) {
    std::string coordinator = coordinator_address();
    pg::fail(
        ERRCODE_CONNECTION_EXCEPTION,
        fmt::format("the coordinator{} failed: {}",
                    coordinator.empty() ? "" : fmt::format(" ({})", coordinator), answer.result));
  }
  return answer.result;
}

namespace {

// SET LOCAL lock_timeout, passed on to the worker nodes: `restore` gives
// them back what they had before set_lock_timeout_on_nodes when the caller
// does not pass its SET LOCALs on (their own default), `ms` otherwise.
void set_nodes_lock_timeout(int ms, bool restore) {
  if (!installed()) return;
  // A DO block needs plpgsql, and USAGE on it, which a hardened database
  // may have revoked from the table's owner; it runs as the bootstrap
  // superuser, the text below with an integer in it, nothing of a user's.
  // Without plpgsql there is no bound to pass on.
  if (!OidIsValid(pg::guard([] { return get_language_oid("plpgsql", true); }))) return;
  // Citus passes a SET LOCAL on only inside what it takes for a
  // multi-statement transaction: a transaction block, a function, or a DO
  // block; the worker's transaction is none of these, so a DO block runs it.
  // Its SET LOCALs would last the rest of a caller's transaction here too,
  // and citus.propagate_set_commands would pass on the caller's own SET
  // LOCALs: both are set back here by set_config, which Citus does not
  // pass on.
  std::string value = std::to_string(Max(ms, 0));
  pg::as_role(BOOTSTRAP_SUPERUSERID, [&] {
    spi::execute(
        fmt::format("DO $partheal$DECLARE "
                    "was_propagate text := pg_catalog.current_setting("
                    "'citus.propagate_set_commands'); "
                    "was_timeout text := pg_catalog.current_setting('lock_timeout'); BEGIN "
                    "SET LOCAL citus.propagate_set_commands = 'local'; "
                    "IF {} AND was_propagate OPERATOR(pg_catalog.=) 'none' THEN "
                    "SET LOCAL lock_timeout TO DEFAULT; ELSE SET LOCAL lock_timeout = {}; END IF; "
                    "PERFORM pg_catalog.set_config('lock_timeout', was_timeout, true); "
                    "PERFORM pg_catalog.set_config('citus.propagate_set_commands', "
                    "was_propagate, true); END$partheal$",
                    restore ? "true" : "false", value),
        SPI_OK_UTILITY);
  });
}

}  // namespace

void set_lock_timeout_on_nodes(int ms) {
  set_nodes_lock_timeout(ms, false);
}

void restore_lock_timeout_on_nodes(int caller_ms) {
  set_nodes_lock_timeout(caller_ms, true);
}

bool refused_during_shard_move(const char* message) {
  // create_distributed_table.c, Citus 13.2: "could not acquire the lock
  // required to colocate distributed table <name>".
  static constexpr char kPrefix[] = "could not acquire the lock required to colocate";
  return std::strncmp(message, kPrefix, sizeof(kPrefix) - 1) == 0;
}

bool may_wait_for_shard_move() {
  if (!installed()) return false;
  return pg::guard([] {
    if (TransactionIdIsValid(GetTopTransactionIdIfAny())) return false;
    LockData* data = GetLockStatusData();
    for (int i = 0; i < data->nelements; ++i) {
      const LockInstanceData* lock = &data->locks[i];
      if (lock->pid == MyProcPid && lock->holdMask != 0 &&
          lock->locktag.locktag_type == LOCKTAG_ADVISORY &&
          lock->locktag.locktag_field1 == MyDatabaseId &&
          lock_class_name(lock->locktag.locktag_field4) != nullptr)
        return false;
    }
    return true;
  });
}

bool colocation_free(Oid relid) {
  // Citus keys the lock by the colocation group, or by the table when it
  // has none (resource_lock.h, SET_LOCKTAG_REBALANCE_PLACEMENT_COLOCATION).
  int64 lock_id = relid;
  with_own_sql({}, [&] {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    if (spi::execute("SELECT colocationid FROM pg_catalog.pg_dist_partition WHERE logicalrelid "
                     "OPERATOR(pg_catalog.=) $1",
                     SPI_OK_SELECT, {1, types, values, nullptr}, true) == 0)
      return;
    std::optional<Datum> id = spi::value(0, 1);
    if (id && DatumGetUInt32(*id) != 0) lock_id = DatumGetUInt32(*id);
  });
  constexpr uint16 kPlacementColocationClass = 13;
  return pg::guard([&] {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(lock_id >> 32),
                         static_cast<uint32>(lock_id), kPlacementColocationClass);
    if (LockAcquire(&tag, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL) return false;
    LockRelease(&tag, ShareLock, false);
    return true;
  });
}

std::optional<std::string> citus_lock_held() {
  if (!installed()) return std::nullopt;
  // What a distributed partition's creation and ATTACH took, measured on
  // Citus 13.2 (pg_locks of create_distributed_table colocated with the
  // parent): ShareLock on its colocation's advisory locks, ROW EXCLUSIVE on
  // new shards' and on pg_dist_partition, pg_dist_shard, pg_dist_placement
  // and pg_dist_object, ROW SHARE on pg_dist_node. A lock of ours in a mode
  // that conflicts with those makes the worker wait for us while we wait
  // for it. The caller's own shard locks (a multi-shard UPDATE holds SHARE
  // UPDATE EXCLUSIVE on the parent's shards) are not the new partition's.
  struct Found {
    bool any;
    bool relation;
    uint16 cls;
    Oid relid;
    LOCKMODE mode;
  };
  Found found = pg::guard([&] {
    Found f{false, false, 0, InvalidOid, NoLock};
    LockData* data = GetLockStatusData();
    for (int i = 0; i < data->nelements && !f.any; ++i) {
      LockInstanceData* lock = &data->locks[i];
      if (lock->pid != MyProcPid || lock->holdMask == 0) continue;
      const LOCKTAG& tag = lock->locktag;
      if (tag.locktag_field1 != MyDatabaseId) continue;
      for (LOCKMODE mode = MaxLockMode; mode > NoLock && !f.any; --mode) {
        if ((lock->holdMask & LOCKBIT_ON(mode)) == 0) continue;
        if (tag.locktag_type == LOCKTAG_ADVISORY &&
            lock_class_name(tag.locktag_field4) != nullptr) {
          LOCKMODE needed = tag.locktag_field4 == 5 ? ShareRowExclusiveLock : ShareLock;
          bool conflicts =
              tag.locktag_field4 == 5 ? mode >= needed : DoLockModesConflict(mode, needed);
          if (conflicts) f = Found{true, false, tag.locktag_field4, InvalidOid, mode};
        } else if (tag.locktag_type == LOCKTAG_RELATION &&
                   get_rel_namespace(tag.locktag_field2) == PG_CATALOG_NAMESPACE) {
          // pg_dist_node is only read (ROW SHARE); the others are written.
          const char* name = get_rel_name(tag.locktag_field2);
          bool node = name != nullptr && strcmp(name, "pg_dist_node") == 0;
          if (name != nullptr && strncmp(name, "pg_dist_", 8) == 0 &&
              DoLockModesConflict(mode, node ? RowShareLock : RowExclusiveLock))
            f = Found{true, true, 0, tag.locktag_field2, mode};
        }
      }
    }
    return f;
  });
  if (!found.any) return std::nullopt;
  const char* mode = pg::guard([&] { return GetLockmodeName(DEFAULT_LOCKMETHOD, found.mode); });
  if (found.relation) {
    const char* name = pg::guard([&] { return get_rel_name(found.relid); });
    return fmt::format("{} on Citus's catalog {}", mode, name != nullptr ? name : "?");
  }
  return fmt::format("{} on a Citus {} lock", mode, lock_class_name(found.cls));
}

}  // namespace partheal::pg::citus
