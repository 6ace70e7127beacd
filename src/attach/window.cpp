#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "attach/window.hpp"
#include "partitions/catalog.hpp"
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

}  // namespace

Relation open_parent(Oid relid) {
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
      std::string name = pg::guarded_text([&] { return get_rel_name(relid); });
      pg::fail(
          ERRCODE_LOCK_NOT_AVAILABLE,
          fmt::format("another transaction held \"{}\" ACCESS EXCLUSIVE for {} ms", name, limit),
          {}, "Try again when that transaction has ended.");
    }
    pg::pause_ms(5);
  }
  Relation rel = pg::open_existing(relid, AccessShareLock);
  if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP) {
    const std::string name = text_of(RelationGetRelationName(rel));
    pg::guard([&] { relation_close(rel, NoLock); });
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED, fmt::format("\"{}\" is a temporary table", name), {},
             "partheal_attach_window works on permanent and unlogged tables; attach a window of a "
             "temporary table with ALTER TABLE ... ATTACH PARTITION.");
  }
  return rel;
}

Parent describe_opened(Relation rel) {
  Parent p;
  p.key = partitions::read_range_key(rel, text_of(RelationGetRelationName(rel)));
  p.columns = columns_of(rel);
  partitions::refresh_partitions(rel);
  static_cast<partitions::Parent&>(p) = partitions::read_parent(rel);
  return p;
}

Parent describe_parent(Oid relid) {
  Relation rel = open_parent(relid);
  Parent p = describe_opened(rel);
  pg::guard([&] { relation_close(rel, NoLock); });
  return p;
}

Window window_from_values(const Parent& parent, Datum lower, Datum upper) {
  Relation rel = pg::open_existing(parent.relid, AccessShareLock);
  int order = partitions::compare_keys(rel, lower, upper);
  pg::guard([&] { relation_close(rel, NoLock); });
  Window w;
  w.lower = lower;
  w.upper = upper;
  partitions::Literal lo = partitions::literal_of(parent.key.type, lower);
  partitions::Literal hi = partitions::literal_of(parent.key.type, upper);
  if (order >= 0)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("the window's lower bound {} is not below its upper bound {}", lo.quoted,
                         hi.quoted),
             {}, "A window is [lower, upper): lower must be less than upper.");
  w.lower_literal = lo.quoted;
  w.upper_literal = hi.quoted;
  w.suffix = partitions::suffix_of_value(parent.key.type, lo.text);
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

partitions::ValueRange value_range(const Window& window) {
  return partitions::ValueRange{window.lower, window.upper, window.lower_literal,
                                window.upper_literal};
}

std::string window_predicate(const Parent& parent) {
  const partitions::RangeKey& k = parent.key;
  return fmt::format("{0}{3} {1} $1 AND {0}{3} {2} $2", k.column, k.ge_operator, k.lt_operator,
                     k.collate);
}

}  // namespace partheal::attach
