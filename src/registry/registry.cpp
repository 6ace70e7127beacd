#include <fmt/format.h>

#include <iterator>
#include <unordered_map>

#include "registry/table_state.hpp"
#include "registry/registry.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/guc_level.hpp"
#include "pg/relation.hpp"
#include "partitions/time_zone.hpp"
#include "pg/spi.hpp"
#include "settings.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/syscache.h"
}

namespace partheal::registry {

using pg::fail;
using pg::guard;

namespace {

struct Entry {
  TablePtr table;
  bool shape_stale = false;  // the parent changed: re-read it from the relcache
};

// Allocated once and never destroyed: no destructor of a cache may run at
// exit(), when PostgreSQL's state is being torn down.
std::unordered_map<Oid, Entry>& cache() {
  static auto* entries = new std::unordered_map<Oid, Entry>();
  return *entries;
}

// Set by the invalidation callback, acted on at the next lookup.
bool registrations_stale = false;  // every entry: re-read the config table
bool sweep_due = false;            // some entry may belong to a dropped table
uint64_t forgotten = 0;

// The config table as last read. Its invalidation (partheal_manage and
// partheal_unmanage send one; DROP EXTENSION drops it) makes every cached
// registration stale. A parent's own invalidation, which every ATTACH sends,
// needs no SQL to answer.
Oid config_relid = InvalidOid;

// Runs inside PostgreSQL's invalidation processing: marks, never allocates
// and never frees (a Relation of an entry's table may be in use right now).
void on_relcache_invalidation(Datum, Oid relid) noexcept {
  if (relid == InvalidOid || relid == config_relid) {
    registrations_stale = true;
    sweep_due = true;
    return;
  }
  auto& entries = cache();
  auto it = entries.find(relid);
  if (it == entries.end()) return;
  it->second.shape_stale = true;
  sweep_due = true;
}

// ALTER SEQUENCE changes pg_sequence, not the table: an INCREMENT BY of a
// registered table's sequence would go unseen by the cached shape, whose
// increment the marks use. Rare, so every entry is read again.
void on_sequence_change(Datum, pg::compat::SyscacheId, uint32) noexcept {
  registrations_stale = true;
  sweep_due = true;
}

// Drops what the invalidations made stale: every entry when registrations
// changed (each is re-read on its next lookup), and the entries of tables
// that no longer exist, so a session that churns through tables keeps no
// memory for the ones it dropped.
void sweep() {
  if (!sweep_due) return;
  auto& entries = cache();
  size_t before = entries.size();
  if (registrations_stale) {
    entries.clear();
  } else {
    for (auto it = entries.begin(); it != entries.end();) {
      Oid relid = it->first;
      bool gone = it->second.shape_stale &&
                  !guard([&] { return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)); });
      it = gone ? entries.erase(it) : std::next(it);
    }
  }
  registrations_stale = false;
  sweep_due = false;
  if (entries.size() != before) ++forgotten;
}

struct ExtensionRow {
  Oid owner;
  Oid schema;
};

// pg_extension's row for partheal. PostgreSQL 15 exports no lookup of an
// extension's schema, so the catalog is read directly.
ExtensionRow extension_row() {
  ExtensionRow row{InvalidOid, InvalidOid};
  bool found = guard([&] {
    Relation rel = table_open(ExtensionRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
                CStringGetDatum("partheal"));
    SysScanDesc scan = systable_beginscan(rel, ExtensionNameIndexId, true, nullptr, 1, &key);
    HeapTuple tuple = systable_getnext(scan);
    bool ok = HeapTupleIsValid(tuple);
    if (ok) {
      auto* ext = reinterpret_cast<Form_pg_extension>(GETSTRUCT(tuple));
      row.owner = ext->extowner;
      row.schema = ext->extnamespace;
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return ok;
  });
  if (!found)
    fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
         "extension \"partheal\" is not installed in this database", {},
         "Run CREATE EXTENSION partheal.");
  return row;
}

}  // namespace

Oid extension_schema() {
  return extension_row().schema;
}

std::string extension_schema_sql() {
  Oid schema = extension_row().schema;
  return guard([&] {
    config_relid = get_relname_relid("partheal_config", schema);
    return quote_identifier(get_namespace_name(schema));
  });
}

namespace {

// The config table's rows (only relid's, unless InvalidOid), read with a
// snapshot taken now, not the transaction's: under REPEATABLE READ the
// transaction snapshot can predate a registration another session has
// changed or removed since, and what is read here is cached beyond this
// transaction. As catalogs are read, the rows are as committed now.
std::vector<std::pair<Oid, Config>> read_config(Oid only) {
  // The config table's columns, by number: the same in a fresh install and
  // after every update script.
  enum Column {
    kParent = 1,
    kSize,
    kPercent,
    kPremake,
    kInterval,
    kZone,
    kRetention,
    kKeepTable,
    kDrain,
    kRetentionIds
  };
  struct Row {
    Oid parent;
    int64 size;
    int32 percent;
    int32 premake;
    bool by_time;
    bool drain;
    bool keep_table;
    int64 retention_ids;
    Interval interval;
    Interval retention;
    char zone[partitions::kZoneNameSize];
  };
  Oid schema = extension_row().schema;
  // Gathered in palloc'd memory: nothing inside the guard may throw.
  Row* found = nullptr;
  int count = guard([&] {
    config_relid = get_relname_relid("partheal_config", schema);
    if (!OidIsValid(config_relid))
      ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                      errmsg("partheal_config is missing from the extension's schema")));
    Relation rel = table_open(config_relid, AccessShareLock);
    Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    ScanKeyData key;
    ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(only));
    SysScanDesc scan =
        systable_beginscan(rel, InvalidOid, false, snapshot, OidIsValid(only) ? 1 : 0, &key);
    TupleDesc desc = RelationGetDescr(rel);
    // A config table an update has not reached yet (ALTER EXTENSION UPDATE
    // pending) has only the first three columns.
    const bool has_time = desc->natts >= kZone;
    const bool has_drain = desc->natts >= kDrain;
    int n = 0, room = 16;
    found = static_cast<Row*>(palloc0(sizeof(Row) * room));
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
      bool null_parent = false, null_size = false, null_percent = false, null_premake = true,
           null_interval = true, null_zone = true;
      Datum parent = heap_getattr(tuple, kParent, desc, &null_parent);
      Datum size = heap_getattr(tuple, kSize, desc, &null_size);
      Datum percent = heap_getattr(tuple, kPercent, desc, &null_percent);
      Datum premake = 0, interval = 0, zone = 0;
      if (has_time) {
        premake = heap_getattr(tuple, kPremake, desc, &null_premake);
        interval = heap_getattr(tuple, kInterval, desc, &null_interval);
        zone = heap_getattr(tuple, kZone, desc, &null_zone);
      }
      if (null_parent || (null_size && null_interval)) continue;
      if (n == room) {
        found = static_cast<Row*>(repalloc(found, sizeof(Row) * room * 2));
        memset(found + room, 0, sizeof(Row) * room);
        room *= 2;
      }
      Row& row = found[n++];
      row.parent = DatumGetObjectId(parent);
      row.size = null_size ? 0 : DatumGetInt64(size);
      row.percent = null_percent ? 0 : DatumGetInt32(percent);
      row.premake = null_premake ? 4 : DatumGetInt32(premake);
      row.by_time = !null_interval;
      // A catalog older than 0.6 has no switch: not drained until updated.
      row.drain = false;
      if (has_time) {
        bool null_retention = true, null_keep = true;
        Datum retention = heap_getattr(tuple, kRetention, desc, &null_retention);
        Datum keep = heap_getattr(tuple, kKeepTable, desc, &null_keep);
        if (!null_retention) row.retention = *DatumGetIntervalP(retention);
        row.keep_table = !null_keep && DatumGetBool(keep);
      }
      if (has_drain) {
        bool null_drain = true;
        Datum drain = heap_getattr(tuple, kDrain, desc, &null_drain);
        row.drain = null_drain || DatumGetBool(drain);
      }
      if (desc->natts >= kRetentionIds) {
        bool null_ids = true;
        Datum ids = heap_getattr(tuple, kRetentionIds, desc, &null_ids);
        row.retention_ids = null_ids ? 0 : DatumGetInt64(ids);
      }
      if (!null_interval) row.interval = *DatumGetIntervalP(interval);
      if (!null_zone) text_to_cstring_buffer(DatumGetTextPP(zone), row.zone, sizeof(row.zone));
    }
    systable_endscan(scan);
    UnregisterSnapshot(snapshot);
    table_close(rel, AccessShareLock);
    return n;
  });
  std::vector<std::pair<Oid, Config>> rows;
  for (int i = 0; i < count; ++i) {
    const Row& r = found[i];
    Config c;
    c.partition_size = r.size;
    c.mark_percent = r.percent;
    c.premake = r.premake;
    c.by_time = r.by_time;
    c.interval_months = r.interval.month;
    c.interval_days = r.interval.day;
    c.interval_us = r.interval.time;
    c.time_zone = r.zone[0] != '\0' ? r.zone : "UTC";
    c.drain_default = r.drain;
    c.retention_months = r.retention.month;
    c.retention_days = r.retention.day;
    c.retention_us = r.retention.time;
    c.retention_keep_table = r.keep_table;
    c.retention_ids = r.retention_ids;
    rows.emplace_back(r.parent, c);
  }
  pg::guard([&] { pfree(found); });
  return rows;
}

}  // namespace

namespace {

// The config table's column count: older catalogs (ALTER EXTENSION UPDATE
// not yet run under a newer library) have fewer.
int config_columns() {
  Oid schema = extension_row().schema;
  return guard([&] {
    Oid relid = get_relname_relid("partheal_config", schema);
    if (!OidIsValid(relid)) return 0;
    Relation rel = table_open(relid, AccessShareLock);
    int n = RelationGetDescr(rel)->natts;
    table_close(rel, AccessShareLock);
    return n;
  });
}

}  // namespace

bool config_has_time_columns() {
  return config_columns() >= 6;
}

bool config_has_drain_column() {
  return config_columns() >= 10;
}

std::optional<Config> configured(Oid relid) {
  std::vector<std::pair<Oid, Config>> rows = read_config(relid);
  if (rows.empty()) return std::nullopt;
  return rows.front().second;
}

std::optional<std::vector<Oid>> registered_tables_nowait() {
  Oid schema = extension_row().schema;
  bool locked = guard([&] {
    Oid relid = get_relname_relid("partheal_config", schema);
    return relid != InvalidOid && ConditionalLockRelationOid(relid, AccessShareLock);
  });
  if (!locked) return std::nullopt;
  return registered_tables();
}

std::vector<Oid> registered_tables() {
  std::vector<Oid> relids;
  for (const auto& [relid, config] : read_config(InvalidOid)) relids.push_back(relid);
  return relids;
}

uint64_t forgotten_count() {
  return forgotten;
}

bool is_cached(Oid relid) {
  return cache().count(relid) > 0;
}

Opened open_for_insert(Oid relid) {
  bool table_insert = false;
  guard([&] {
    // As INSERT checks: the table, or at least one column. The INSERT
    // itself then checks the columns it names, the id column among them.
    AclResult acl = pg_class_aclcheck(relid, GetUserId(), ACL_INSERT);
    table_insert = acl == ACLCHECK_OK;
    if (acl != ACLCHECK_OK &&
        pg_attribute_aclcheck_all(relid, GetUserId(), ACL_INSERT, ACLMASK_ANY) == ACLCHECK_OK)
      acl = ACLCHECK_OK;
    if (acl != ACLCHECK_OK) {
      const char* name = get_rel_name(relid);
      aclcheck_error(acl, OBJECT_TABLE, name != nullptr ? name : "?");
    }
  });
  Relation parent = pg::open_existing(relid, RowExclusiveLock);
  TablePtr table = lookup(parent);
  if (table == nullptr)
    fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
         fmt::format("\"{}\" is not managed by partheal", RelationGetRelationName(parent)), {},
         "Register it first: SELECT partheal_manage('table', partition_size).");
  return Opened{parent, table, table_insert};
}

TablePtr cached(Oid relid) {
  sweep();
  auto& entries = cache();
  auto it = entries.find(relid);
  if (it == entries.end() || it->second.shape_stale) return nullptr;
  return it->second.table;
}

TablePtr lookup(Relation parent) {
  sweep();
  Oid relid = RelationGetRelid(parent);
  auto& entries = cache();
  auto it = entries.find(relid);
  if (it != entries.end() && !it->second.shape_stale) return it->second.table;

  auto table = std::make_shared<ManagedTable>();
  if (it == entries.end()) {
    std::optional<Config> config = configured(relid);
    if (!config) return nullptr;
    table->config = *config;
    table->shape = describe(parent);
    // After a restart shared memory starts empty: the state comes back here.
    // If partheal.max_tables is full, heals still work; create-ahead and the
    // counters do not.
    (void)registry::track(relid, table->key_spec().fingerprint(), config->mark_percent,
                          table->shape.key_max);
  } else {
    table->config = it->second.table->config;
    table->shape = describe(parent);
  }
  // The caller holds a lock on the parent that keeps its shape from
  // changing, so what describe() read stays current whatever invalidations
  // it processed (a new partition changes nothing it reads).
  entries[relid] = Entry{table, false};
  return table;
}

partitions::KeySpec ManagedTable::key_spec() const {
  partitions::KeySpec spec;
  spec.min = shape.key_min;
  spec.max = shape.key_max;
  if (!config.by_time) {
    spec.cut = partitions::Cut::kIds;
    spec.step = config.partition_size;
    return spec;
  }
  partitions::IntervalCut cut = partitions::cut_of_interval(
      config.interval_months, config.interval_days, config.interval_us, shape.key_type == DATEOID);
  // partheal_manage refused any other interval; a config row written by
  // hand with one gets the day.
  spec.cut = cut.ok ? cut.cut : partitions::Cut::kDays;
  spec.step = cut.ok ? cut.step : 1;
  spec.date_key = shape.key_type == DATEOID;
  spec.zoned = shape.key_type == TIMESTAMPTZOID;
  strlcpy(spec.zone, spec.zoned ? config.time_zone.c_str() : "UTC", sizeof(spec.zone));
  return spec;
}

partitions::KeySpace ManagedTable::key_space() const {
  return partitions::space_of(key_spec());
}

bool ManagedTable::drains_default() const {
  return shape.key_is_time && config.drain_default && settings::drain_default;
}

void registrations_changed() {
  // Sent at commit to every backend: all of them re-read the config table.
  if (config_relid != InvalidOid) guard([] { CacheInvalidateRelcacheByRelid(config_relid); });
}

void as_extension_owner(void (*f)(void*), void* ctx) {
  Oid owner = extension_row().owner;
  Oid saved_user = InvalidOid;
  int saved_context = 0;
  GetUserIdAndSecContext(&saved_user, &saved_context);
  guard([&] { SetUserIdAndSecContext(owner, saved_context | SECURITY_LOCAL_USERID_CHANGE); });
  try {
    f(ctx);
  } catch (...) {
    SetUserIdAndSecContext(saved_user, saved_context);
    throw;
  }
  SetUserIdAndSecContext(saved_user, saved_context);
}

void install_invalidation_callback() {
  CacheRegisterRelcacheCallback(on_relcache_invalidation, Datum(0));
  CacheRegisterSyscacheCallback(SEQRELID, on_sequence_change, Datum(0));
}

}  // namespace partheal::registry
