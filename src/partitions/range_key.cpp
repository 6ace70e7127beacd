#include "partitions/range_key.hpp"

#include <fmt/format.h>

#include <string>

#include "partitions/catalog.hpp"
#include "partitions/key_space.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/syscache.h"
}

namespace partheal::partitions {

namespace {

std::string text_of(const char* s) {
  return s == nullptr ? std::string() : std::string(s);
}

std::string operator_sql(Oid opfamily, Oid type, int16 strategy) {
  const char* schema = nullptr;
  const char* name = nullptr;
  bool found = pg::guard([&] {
    Oid op = get_opfamily_member(opfamily, type, type, strategy);
    HeapTuple tuple = SearchSysCache1(OPEROID, ObjectIdGetDatum(op));
    if (!HeapTupleIsValid(tuple)) return false;
    auto* form = reinterpret_cast<Form_pg_operator>(GETSTRUCT(tuple));
    schema = get_namespace_name(form->oprnamespace);
    name = pstrdup(NameStr(form->oprname));
    ReleaseSysCache(tuple);
    return true;
  });
  if (!found)
    pg::fail(ERRCODE_UNDEFINED_OBJECT, "partheal: the partition key has no btree operator");
  return fmt::format("OPERATOR({}.{})", pg::quoted(text_of(schema)), text_of(name));
}

std::string collate_sql(Oid collation) {
  if (!OidIsValid(collation)) return {};
  const char* schema = nullptr;
  const char* name = nullptr;
  pg::guard([&] {
    HeapTuple tuple = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for collation %u", collation);
    auto* form = reinterpret_cast<Form_pg_collation>(GETSTRUCT(tuple));
    schema = get_namespace_name(form->collnamespace);
    name = pstrdup(NameStr(form->collname));
    ReleaseSysCache(tuple);
  });
  return fmt::format(" COLLATE {}.{}", pg::quoted(text_of(schema)), pg::quoted(text_of(name)));
}

}  // namespace

RangeKey read_range_key(Relation rel, const std::string& table) {
  PartitionKey pk = pg::guard([&] { return RelationGetPartitionKey(rel); });
  if (pk == nullptr)
    pg::fail(ERRCODE_WRONG_OBJECT_TYPE, fmt::format("\"{}\" is not a partitioned table", table), {},
             "partheal_attach_window attaches windows of a table partitioned by RANGE.");
  if (pk->strategy != PARTITION_STRATEGY_RANGE || pk->partnatts != 1 || pk->partattrs[0] == 0)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("\"{}\" is not partitioned by RANGE on one column", table), {},
             "partheal_attach_window needs PARTITION BY RANGE (column).");
  RangeKey key;
  AttrNumber attnum = pk->partattrs[0];
  key.column =
      pg::quoted(text_of(NameStr(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attname)));
  key.type = pk->parttypid[0];
  key.typmod = pk->parttypmod[0];
  key.ge_operator =
      operator_sql(pk->partopfamily[0], pk->partopcintype[0], BTGreaterEqualStrategyNumber);
  key.lt_operator = operator_sql(pk->partopfamily[0], pk->partopcintype[0], BTLessStrategyNumber);
  key.collate = collate_sql(pk->partcollation[0]);
  return key;
}

int compare_keys(Relation rel, Datum a, Datum b) {
  return pg::guard([&] {
    PartitionKey pk = RelationGetPartitionKey(rel);
    return DatumGetInt32(FunctionCall2Coll(&pk->partsupfunc[0], pk->partcollation[0], a, b));
  });
}

Literal literal_of(Oid type, Datum value) {
  const char* text = nullptr;
  const char* quoted = nullptr;
  pg::guard([&] {
    Oid output = InvalidOid;
    bool varlena = false;
    getTypeOutputInfo(type, &output, &varlena);
    int level = NewGUCNestLevel();
    (void)set_config_option("datestyle", "ISO, YMD", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                            true, 0, false);
    (void)set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    (void)set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                            true, 0, false);
    text = OidOutputFunctionCall(output, value);
    AtEOXact_GUC(true, level);
    quoted = quote_literal_cstr(text);
  });
  return Literal{quoted, text};
}

std::string suffix_of_value(Oid type, const std::string& text) {
  return value_suffix(type == DATEOID || type == TIMESTAMPOID || type == TIMESTAMPTZOID, text);
}

std::optional<Oid> partition_with_bounds(Oid parent, const std::string& parent_name,
                                         const ValueRange& window) {
  Relation rel = pg::open_existing(parent, AccessShareLock);
  partitions::refresh_partitions(rel);
  // Partitions pending DETACH CONCURRENTLY too: until the detach is
  // finalized their bounds are still taken, and ATTACH would refuse the
  // window with its own 42P17.
  PartitionDesc desc = pg::guard([&] { return RelationGetPartitionDesc(rel, false); });
  PartitionBoundInfo info = desc->boundinfo;
  std::optional<Oid> same;
  Oid overlapping = InvalidOid;
  // indexes[j] is the partition holding [datums[j-1], datums[j]); -1 a gap.
  for (int j = 1; info != nullptr && j <= info->ndatums && j < info->nindexes; ++j) {
    int part = info->indexes[j];
    if (part < 0) continue;
    bool lower_min = info->kind[j - 1][0] == PARTITION_RANGE_DATUM_MINVALUE;
    bool upper_max = j == info->ndatums || info->kind[j][0] == PARTITION_RANGE_DATUM_MAXVALUE;
    Datum p_lower = info->datums[j - 1][0];
    Datum p_upper = j < info->ndatums ? info->datums[j][0] : 0;
    // [a, b) and [c, d) overlap when a < d and c < b.
    bool starts_before_end = upper_max || compare_keys(rel, window.lower, p_upper) < 0;
    bool ends_after_start = lower_min || compare_keys(rel, p_lower, window.upper) < 0;
    if (!(starts_before_end && ends_after_start)) continue;
    bool exact = !lower_min && !upper_max && compare_keys(rel, window.lower, p_lower) == 0 &&
                 compare_keys(rel, window.upper, p_upper) == 0;
    Oid oid = desc->oids[part];
    if (exact && !pg::guard([&] { return PartitionHasPendingDetach(oid); }))
      same = oid;
    else
      overlapping = oid;
  }
  pg::guard([&] { relation_close(rel, NoLock); });
  if (OidIsValid(overlapping)) {
    std::string name = pg::guarded_text([&] { return get_rel_name(overlapping); });
    if (pg::guard([&] { return PartitionHasPendingDetach(overlapping); }))
      pg::fail(ERRCODE_INVALID_OBJECT_DEFINITION,
               fmt::format("the window FROM ({}) TO ({}) would overlap partition \"{}\" of \"{}\", "
                           "which is being detached",
                           window.lower_literal, window.upper_literal, name, parent_name),
               "A DETACH PARTITION ... CONCURRENTLY of it was started and not finished; its "
               "bounds stay taken until it is.",
               fmt::format("Finish it with ALTER TABLE {} DETACH PARTITION {} FINALIZE, then "
                           "attach the window; nothing was changed.",
                           pg::quoted(parent_name), pg::quoted(name)));
    pg::fail(ERRCODE_INVALID_OBJECT_DEFINITION,
             fmt::format("the window FROM ({}) TO ({}) would overlap partition \"{}\" of \"{}\"",
                         window.lower_literal, window.upper_literal, name, parent_name),
             {}, "Choose bounds that fit between the attached partitions; nothing was changed.");
  }
  return same;
}

void clip_to_gap(Oid parent, Datum key, Datum& lower, Datum& upper) {
  Relation rel = pg::open_existing(parent, AccessShareLock);
  partitions::refresh_partitions(rel);
  PartitionDesc desc = pg::guard([&] { return RelationGetPartitionDesc(rel, true); });
  PartitionBoundInfo info = desc->boundinfo;
  // Every finite datum is some partition's end: the greatest at or below
  // the key is where the gap starts, the least above it where it ends.
  for (int j = 0; info != nullptr && j < info->ndatums; ++j) {
    if (info->kind[j][0] != PARTITION_RANGE_DATUM_VALUE) continue;
    Datum d = info->datums[j][0];
    if (compare_keys(rel, d, key) <= 0) {
      if (compare_keys(rel, d, lower) > 0) lower = d;
    } else if (compare_keys(rel, d, upper) < 0) {
      upper = d;
    }
  }
  pg::guard([&] { relation_close(rel, NoLock); });
}

}  // namespace partheal::partitions
