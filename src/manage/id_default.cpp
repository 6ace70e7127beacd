// The id column's default: partheal_nextval put in by partheal_manage's
// nextval_default, the plain nextval put back by nextval_default false and
// by partheal_unmanage.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "manage/id_default_internal.hpp"
#include "partitions/key_default.hpp"
#include "registry/registry.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/own_sql.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "pg/spi.hpp"

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
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
}

namespace partheal::manage {

namespace {

// Sets the key column's default, as the caller (who owns the table), with
// partheal's own search_path. ALTER COLUMN SET DEFAULT locks the table
// ACCESS EXCLUSIVE for the rest of the transaction.
void set_key_default(const registry::TableShape& shape, const std::string& expression) {
  std::string sql =
      fmt::format("ALTER TABLE ONLY {}.{} ALTER COLUMN {} SET DEFAULT {}", pg::quoted(shape.schema),
                  pg::quoted(shape.name), pg::quoted(shape.key_column), expression);
  pg::with_own_sql({}, [&] { pg::spi::execute(sql, SPI_OK_UTILITY); });
}

// The tables whose column defaults call partheal_nextval, found through
// pg_depend: none is opened or locked.
std::vector<Oid> every_table_with_partheal_default() {
  Oid schema = registry::extension_schema();
  const char* schema_name = pg::guard([&] { return get_namespace_name(schema); });
  List* found = pg::guard([&]() -> List* {
    Oid argtypes[2] = {REGCLASSOID, REGCLASSOID};
    Oid func = LookupFuncName(
        list_make2(makeString(pstrdup(schema_name)), makeString(pstrdup("partheal_nextval"))), 2,
        argtypes, true);
    if (!OidIsValid(func)) return NIL;
    List* adrelids = NIL;
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
      if (OidIsValid(column.objectId)) adrelids = list_append_unique_oid(adrelids, column.objectId);
    }
    systable_endscan(scan);
    table_close(depend, AccessShareLock);
    return adrelids;
  });
  std::vector<Oid> out;
  ListCell* cell;
  foreach (cell, found) out.push_back(lfirst_oid(cell));
  return out;
}

// The tables among relid and its partitions whose column defaults call
// partheal_nextval: no other partition is opened or locked.
std::vector<Oid> tables_with_partheal_default(Oid relid) {
  std::vector<Oid> defaults_of = every_table_with_partheal_default();
  if (defaults_of.empty()) return {};
  List* all = pg::guard([&] { return find_all_inheritors(relid, NoLock, nullptr); });
  std::vector<Oid> out;
  ListCell* cell;
  foreach (cell, all) {
    Oid table = lfirst_oid(cell);
    if (std::find(defaults_of.begin(), defaults_of.end(), table) != defaults_of.end() &&
        std::find(out.begin(), out.end(), table) == out.end())
      out.push_back(table);
  }
  return out;
}

// A partition restore_nextval leaves as it is, since the caller does not
// own it: the WARNING names its owner, who can change it.
void warn_not_owned(Oid table) {
  std::string label = pg::relation_label(table);
  const char* owner = pg::guard([&]() -> const char* {
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(table));
    Oid role = HeapTupleIsValid(tuple) ? reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relowner
                                       : InvalidOid;
    if (HeapTupleIsValid(tuple)) ReleaseSysCache(tuple);
    return GetUserNameFromId(role, true) ? GetUserNameFromId(role, true) : "?";
  });
  pg::report(WARNING, 0,
             fmt::format("partition {} keeps partheal_nextval as its id default: it is owned by "
                         "role \"{}\"",
                         label, owner),
             {{},
              "Its owner can give it the plain nextval default with ALTER TABLE ONLY ... ALTER "
              "COLUMN ... SET DEFAULT; until then DROP EXTENSION partheal fails on it."});
}

}  // namespace

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
  restore_nextval_of(tables_with_partheal_default(relid));
}

// Every table of the database, on the way out of DROP EXTENSION: with the
// defaults back to nextval, nothing of the tables depends on partheal, so
// the plain DROP works and CASCADE drops no default (issue 35, point 14).
void restore_every_nextval() {
  restore_nextval_of(every_table_with_partheal_default());
}

void restore_nextval_of(const std::vector<Oid>& tables) {
  pg::with_own_sql({}, [&] {
    for (Oid table : tables) {
      if (!pg::guard([&] { return pg::compat::owns_relation(table, GetUserId()); })) {
        warn_not_owned(table);
        continue;
      }
      for (const std::string& sql : partitions::restore_nextval_sql(table))
        pg::spi::execute(sql, SPI_OK_UTILITY);
    }
  });
}

}  // namespace partheal::manage
