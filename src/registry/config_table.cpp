// The config table, partheal_config, and pg_extension's row for partheal:
// what registry.cpp caches, read from the catalog.
#include "registry/config_table_internal.hpp"

#include "partitions/time_zone.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

namespace partheal::registry {

using pg::fail;
using pg::guard;

namespace {

// The config table as last read. Its invalidation (partheal_manage and
// partheal_unmanage send one; DROP EXTENSION drops it) makes every cached
// registration stale. A parent's own invalidation, which every ATTACH sends,
// needs no SQL to answer.
Oid config_relid = InvalidOid;

}  // namespace

Oid last_config_relid() noexcept {
  return config_relid;
}

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
  kRetentionIds,
  kDrainReach
};

// One row as read, in plain memory: gathered inside a guard, where
// nothing may throw.
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
  Interval drain_reach;
  char zone[partitions::kZoneNameSize];
};

// Reads a tuple shaped as the config table's (the table's own, or a row of
// its type), whatever update it is at: a config table an update has not
// reached yet (ALTER EXTENSION UPDATE pending) has fewer columns. False for
// a row without a parent or a size or interval. PostgreSQL calls only: it
// runs inside a guard.
bool parse_row(HeapTuple tuple, TupleDesc desc, Row* row) {
  const bool has_time = desc->natts >= kZone;
  const bool has_drain = desc->natts >= kDrain;
  bool null_parent = false, null_size = false, null_percent = false, null_premake = true,
       null_interval = true, null_zone = true;
  Datum parent = pg::compat::getattr(tuple, kParent, desc, &null_parent);
  Datum size = pg::compat::getattr(tuple, kSize, desc, &null_size);
  Datum percent = pg::compat::getattr(tuple, kPercent, desc, &null_percent);
  Datum premake = 0, interval = 0, zone = 0;
  if (has_time) {
    premake = pg::compat::getattr(tuple, kPremake, desc, &null_premake);
    interval = pg::compat::getattr(tuple, kInterval, desc, &null_interval);
    zone = pg::compat::getattr(tuple, kZone, desc, &null_zone);
  }
  if (null_parent || (null_size && null_interval)) return false;
  memset(row, 0, sizeof(Row));
  row->parent = DatumGetObjectId(parent);
  row->size = null_size ? 0 : DatumGetInt64(size);
  row->percent = null_percent ? 0 : DatumGetInt32(percent);
  row->premake = null_premake ? 4 : DatumGetInt32(premake);
  row->by_time = !null_interval;
  // A catalog older than 0.6 has no switch: not drained until updated.
  row->drain = false;
  if (has_time) {
    bool null_retention = true, null_keep = true;
    Datum retention = pg::compat::getattr(tuple, kRetention, desc, &null_retention);
    Datum keep = pg::compat::getattr(tuple, kKeepTable, desc, &null_keep);
    if (!null_retention) row->retention = *DatumGetIntervalP(retention);
    row->keep_table = !null_keep && DatumGetBool(keep);
  }
  if (has_drain) {
    bool null_drain = true;
    Datum drain = pg::compat::getattr(tuple, kDrain, desc, &null_drain);
    row->drain = null_drain || DatumGetBool(drain);
  }
  if (desc->natts >= kRetentionIds) {
    bool null_ids = true;
    Datum ids = pg::compat::getattr(tuple, kRetentionIds, desc, &null_ids);
    row->retention_ids = null_ids ? 0 : DatumGetInt64(ids);
  }
  if (desc->natts >= kDrainReach) {
    bool null_reach = true;
    Datum reach = pg::compat::getattr(tuple, kDrainReach, desc, &null_reach);
    if (!null_reach) row->drain_reach = *DatumGetIntervalP(reach);
  }
  if (!null_interval) row->interval = *DatumGetIntervalP(interval);
  if (!null_zone) text_to_cstring_buffer(DatumGetTextPP(zone), row->zone, sizeof(row->zone));
  return true;
}

Config config_of(const Row& r) {
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
  c.drain_reach_months = r.drain_reach.month;
  c.drain_reach_days = r.drain_reach.day;
  c.drain_reach_us = r.drain_reach.time;
  return c;
}

}  // namespace

std::optional<Config> config_of_tuple(HeapTuple tuple, TupleDesc desc) {
  Row row;
  if (!guard([&] { return parse_row(tuple, desc, &row); })) return std::nullopt;
  return config_of(row);
}

// The config table's rows (only relid's, unless InvalidOid), read with a
// snapshot taken now, not the transaction's: under REPEATABLE READ the
// transaction snapshot can predate a registration another session has
// changed or removed since, and what is read here is cached beyond this
// transaction. As catalogs are read, the rows are as committed now.
std::vector<std::pair<Oid, Config>> read_config(Oid only) {
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
    int n = 0, room = 16;
    found = static_cast<Row*>(palloc0(sizeof(Row) * room));
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
      if (n == room) {
        found = static_cast<Row*>(repalloc(found, sizeof(Row) * room * 2));
        memset(found + room, 0, sizeof(Row) * room);
        room *= 2;
      }
      if (parse_row(tuple, desc, &found[n])) ++n;
    }
    systable_endscan(scan);
    UnregisterSnapshot(snapshot);
    table_close(rel, AccessShareLock);
    return n;
  });
  std::vector<std::pair<Oid, Config>> rows;
  for (int i = 0; i < count; ++i) rows.emplace_back(found[i].parent, config_of(found[i]));
  pg::guard([&] { pfree(found); });
  return rows;
}

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

bool config_has_drain_reach_column() {
  return config_columns() >= 11;
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

}  // namespace partheal::registry
