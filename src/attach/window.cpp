#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "attach/window.hpp"
#include "heal/bounds.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/pause.hpp"
#include "pg/relation.hpp"
#include "pg/spi.hpp"
#include "settings.hpp"

extern "C" {
#include "catalog/pg_inherits.h"
#include "utils/guc.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/syscache.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/timestamp.h"
}

namespace partheal::attach {

namespace {

std::string text_of(const char* s) {
  return s == nullptr ? std::string() : std::string(s);
}

std::string operator_sql(Oid opfamily, Oid type, int16 strategy) {
  std::string schema;
  std::string name;
  bool found = pg::guard([&] {
    Oid op = get_opfamily_member(opfamily, type, type, strategy);
    HeapTuple tuple = SearchSysCache1(OPEROID, ObjectIdGetDatum(op));
    if (!HeapTupleIsValid(tuple)) return false;
    auto* form = reinterpret_cast<Form_pg_operator>(GETSTRUCT(tuple));
    schema = text_of(get_namespace_name(form->oprnamespace));
    name = text_of(NameStr(form->oprname));
    ReleaseSysCache(tuple);
    return true;
  });
  if (!found)
    pg::fail(ERRCODE_UNDEFINED_OBJECT, "partheal: the partition key has no btree operator");
  return fmt::format("OPERATOR({}.{})", pg::quoted(schema), name);
}

std::string collate_sql(Oid collation) {
  if (!OidIsValid(collation)) return {};
  std::string schema;
  std::string name;
  pg::guard([&] {
    HeapTuple tuple = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for collation %u", collation);
    auto* form = reinterpret_cast<Form_pg_collation>(GETSTRUCT(tuple));
    schema = text_of(get_namespace_name(form->collnamespace));
    name = text_of(NameStr(form->collname));
    ReleaseSysCache(tuple);
  });
  return fmt::format(" COLLATE {}.{}", pg::quoted(schema), pg::quoted(name));
}

RangeKey key_of(Relation rel, const std::string& table) {
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

std::string columns_of(Relation rel) {
  std::string out;
  TupleDesc desc = RelationGetDescr(rel);
  for (int i = 0; i < desc->natts; ++i) {
    Form_pg_attribute att = TupleDescAttr(desc, i);
    if (att->attisdropped || att->attgenerated != '\0') continue;
    if (!out.empty()) out += ", ";
    out += pg::quoted(text_of(NameStr(att->attname)));
  }
  return out;
}

// Compares two values of the key with the partition key's own support
// function, as PostgreSQL orders bounds.
int compare(Relation rel, Datum a, Datum b) {
  return pg::guard([&] {
    PartitionKey pk = RelationGetPartitionKey(rel);
    return DatumGetInt32(FunctionCall2Coll(&pk->partsupfunc[0], pk->partcollation[0], a, b));
  });
}

// "_p20260101" for a time, "_p1000" or "_pm5" for an integer, and the letters
// and digits of the value's text for any other type.
std::string suffix_of(Oid type, const std::string& text) {
  std::string out = "_p";
  if (type == DATEOID || type == TIMESTAMPOID || type == TIMESTAMPTZOID) {
    for (size_t i = 0; i < text.size() && i < 10; ++i)
      if (std::isdigit(static_cast<unsigned char>(text[i]))) out += text[i];
    std::string time = text.size() >= 19 ? text.substr(11, 8) : std::string("00:00:00");
    if (time != "00:00:00") {
      out += '_';
      for (char c : time)
        if (std::isdigit(static_cast<unsigned char>(c))) out += c;
    }
    return out;
  }
  for (char c : text) {
    if (c == '-')
      out += 'm';
    else if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else
      out += '_';
  }
  return out;
}

struct Literal {
  std::string quoted;
  std::string text;
};

// The value as a quoted literal, written in ISO style so that reading it
// back, in the ATTACH partheal runs next, cannot depend on DateStyle.
Literal literal_of(Oid type, Datum value) {
  Literal out;
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
    char* text = OidOutputFunctionCall(output, value);
    AtEOXact_GUC(true, level);
    out.text = text;
    out.quoted = quote_literal_cstr(text);
  });
  return out;
}

}  // namespace

Parent describe_parent(Oid relid) {
  // Ownership first: a caller who may not attach must not even queue for a
  // lock on the table.
  pg::guard([&] {
    if (!pg::compat::owns_relation(relid, GetUserId()))
      aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
  });
  // A transaction holding the table ACCESS EXCLUSIVE (DDL) would hold
  // partheal as long as it likes: partheal polls for its read lock, for as
  // long as all its lock attempts together may take.
  long limit =
      static_cast<long>(settings::attach_lock_attempts) * settings::attach_lock_budget_ms();
  TimestampTz started = pg::guard([] { return GetCurrentTimestamp(); });
  while (!pg::guard([&] { return ConditionalLockRelationOid(relid, AccessShareLock); })) {
    bool spent = pg::guard(
        [&] { return TimestampDifferenceMilliseconds(started, GetCurrentTimestamp()) >= limit; });
    if (spent) {
      std::string name = pg::guard([&] { return text_of(get_rel_name(relid)); });
      pg::fail(
          ERRCODE_LOCK_NOT_AVAILABLE,
          fmt::format("another transaction held \"{}\" ACCESS EXCLUSIVE for {} ms", name, limit),
          {}, "Try again when that transaction has ended.");
    }
    pg::pause_ms(5);
  }
  Relation rel = pg::open_existing(relid, AccessShareLock);
  Parent p;
  p.relid = relid;
  p.name = text_of(RelationGetRelationName(rel));
  p.schema = pg::guard([&] { return text_of(get_namespace_name(RelationGetNamespace(rel))); });
  p.owner = rel->rd_rel->relowner;
  if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED, fmt::format("\"{}\" is a temporary table", p.name), {},
             "partheal_attach_window works on permanent and unlogged tables; attach a window of a "
             "temporary table with ALTER TABLE ... ATTACH PARTITION.");
  p.key = key_of(rel, p.name);
  p.columns = columns_of(rel);
  heal::refresh_partitions(rel);
  Oid default_relid = pg::guard([&] {
    PartitionDesc desc = RelationGetPartitionDesc(rel, true);
    return desc->boundinfo != nullptr && partition_bound_has_default(desc->boundinfo)
               ? desc->oids[desc->boundinfo->default_index]
               : InvalidOid;
  });
  if (OidIsValid(default_relid)) {
    p.default_relid = default_relid;
    pg::guard([&] {
      p.default_name = text_of(get_rel_name(default_relid));
      p.default_schema = text_of(get_namespace_name(get_rel_namespace(default_relid)));
      char kind = get_rel_relkind(default_relid);
      p.default_is_foreign = kind == RELKIND_FOREIGN_TABLE;
      p.default_is_partitioned = kind == RELKIND_PARTITIONED_TABLE;
    });
    p.default_sql = pg::quoted(p.default_schema) + "." + pg::quoted(p.default_name);
  }
  pg::guard([&] { relation_close(rel, NoLock); });
  return p;
}

Window window_from_values(const Parent& parent, Datum lower, Datum upper) {
  Relation rel = pg::open_existing(parent.relid, AccessShareLock);
  int order = compare(rel, lower, upper);
  pg::guard([&] { relation_close(rel, NoLock); });
  Window w;
  w.lower = lower;
  w.upper = upper;
  Literal lo = literal_of(parent.key.type, lower);
  Literal hi = literal_of(parent.key.type, upper);
  if (order >= 0)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("the window's lower bound {} is not below its upper bound {}", lo.quoted,
                         hi.quoted),
             {}, "A window is [lower, upper): lower must be less than upper.");
  w.lower_literal = lo.quoted;
  w.upper_literal = hi.quoted;
  w.suffix = suffix_of(parent.key.type, lo.text);
  return w;
}

Window window_from_text(const Parent& parent, const std::string& lower, const std::string& upper) {
  Oid type = parent.key.type;
  int32 typmod = parent.key.typmod;
  auto cast = [&](const std::string& text) {
    const char* s = text.c_str();
    return pg::guard([&] {
      Oid input = InvalidOid;
      Oid ioparam = InvalidOid;
      getTypeInputInfo(type, &input, &ioparam);
      return OidInputFunctionCall(input, const_cast<char*>(s), ioparam, typmod);
    });
  };
  Datum lo = cast(lower);
  Datum hi = cast(upper);
  return window_from_values(parent, lo, hi);
}

std::optional<Oid> partition_with_bounds(const Parent& parent, const Window& window) {
  Relation rel = pg::open_existing(parent.relid, AccessShareLock);
  heal::refresh_partitions(rel);
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
    bool starts_before_end = upper_max || compare(rel, window.lower, p_upper) < 0;
    bool ends_after_start = lower_min || compare(rel, p_lower, window.upper) < 0;
    if (!(starts_before_end && ends_after_start)) continue;
    bool exact = !lower_min && !upper_max && compare(rel, window.lower, p_lower) == 0 &&
                 compare(rel, window.upper, p_upper) == 0;
    Oid oid = desc->oids[part];
    if (exact && !pg::guard([&] { return PartitionHasPendingDetach(oid); }))
      same = oid;
    else
      overlapping = oid;
  }
  pg::guard([&] { relation_close(rel, NoLock); });
  if (OidIsValid(overlapping)) {
    std::string name = pg::guard([&] { return text_of(get_rel_name(overlapping)); });
    if (pg::guard([&] { return PartitionHasPendingDetach(overlapping); }))
      pg::fail(ERRCODE_INVALID_OBJECT_DEFINITION,
               fmt::format("the window FROM ({}) TO ({}) would overlap partition \"{}\" of \"{}\", "
                           "which is being detached",
                           window.lower_literal, window.upper_literal, name, parent.name),
               "A DETACH PARTITION ... CONCURRENTLY of it was started and not finished; its "
               "bounds stay taken until it is.",
               fmt::format("Finish it with ALTER TABLE {} DETACH PARTITION {} FINALIZE, then "
                           "attach the window; nothing was changed.",
                           pg::quoted(parent.name), pg::quoted(name)));
    pg::fail(ERRCODE_INVALID_OBJECT_DEFINITION,
             fmt::format("the window FROM ({}) TO ({}) would overlap partition \"{}\" of \"{}\"",
                         window.lower_literal, window.upper_literal, name, parent.name),
             {}, "Choose bounds that fit between the attached partitions; nothing was changed.");
  }
  return same;
}

void clip_to_gap(const Parent& parent, Datum key, Datum& lower, Datum& upper) {
  Relation rel = pg::open_existing(parent.relid, AccessShareLock);
  heal::refresh_partitions(rel);
  PartitionDesc desc = pg::guard([&] { return RelationGetPartitionDesc(rel, true); });
  PartitionBoundInfo info = desc->boundinfo;
  // Every finite datum is some partition's end: the greatest at or below
  // the key is where the gap starts, the least above it where it ends.
  for (int j = 0; info != nullptr && j < info->ndatums; ++j) {
    if (info->kind[j][0] != PARTITION_RANGE_DATUM_VALUE) continue;
    Datum d = info->datums[j][0];
    if (compare(rel, d, key) <= 0) {
      if (compare(rel, d, lower) > 0) lower = d;
    } else if (compare(rel, d, upper) < 0) {
      upper = d;
    }
  }
  pg::guard([&] { relation_close(rel, NoLock); });
}

std::string window_predicate(const Parent& parent) {
  const RangeKey& k = parent.key;
  return fmt::format("{0}{3} {1} $1 AND {0}{3} {2} $2", k.column, k.ge_operator, k.lt_operator,
                     k.collate);
}

}  // namespace partheal::attach
