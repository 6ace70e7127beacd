#include <fmt/format.h>

#include <limits>

#include "partitions/catalog.hpp"
#include "partitions/key_default.hpp"
#include "partitions/time_zone.hpp"
#include "registry/registry.hpp"
#include "registry/shape.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_sequence.h"
#include "utils/syscache.h"
#include "commands/extension.h"
#include "catalog/pg_partitioned_table.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
}

namespace partheal::registry {

using pg::fail;
using pg::guard;

namespace {

constexpr const char* kShapeHint =
    "partheal manages tables declared PARTITION BY RANGE on one column: a smallint, integer or "
    "bigint id whose default draws from a sequence (serial, bigserial or an identity), or a "
    "timestamptz, timestamp or date.";

struct SequenceUse {
  Oid sequence = InvalidOid;
  bool needs_acl = true;
  bool via_partheal = false;
};

// Finds the sequence a column default draws from: an identity's
// NextValueExpr, or nextval('seq') as serial and hand-written defaults have.
bool find_sequence(Node* node, void* context) {
  if (node == nullptr) return false;
  auto* use = static_cast<SequenceUse*>(context);
  if (IsA(node, NextValueExpr)) {
    use->sequence = castNode(NextValueExpr, node)->seqid;
    use->needs_acl = false;
    return true;
  }
  if (IsA(node, FuncExpr)) {
    auto* call = castNode(FuncExpr, node);
    if (call->funcid == F_NEXTVAL && list_length(call->args) == 1 &&
        IsA(linitial(call->args), Const)) {
      auto* arg = castNode(Const, linitial(call->args));
      if (!arg->constisnull && arg->consttype == REGCLASSOID) {
        use->sequence = DatumGetObjectId(arg->constvalue);
        use->needs_acl = true;
        return true;
      }
    }
  }
  // PostgreSQL 15 declares the walker as bool (*)(); the detour through
  // void (*)() is the cast C++ allows for that.
  auto walker = reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(find_sequence));
  return expression_tree_walker(node, walker, context);
}

// The parent's partition key, refused unless it is RANGE on one column.
PartitionKey range_key(Relation parent, const std::string& name) {
  PartitionKey key = guard([&] { return RelationGetPartitionKey(parent); });
  if (key->strategy != PARTITION_STRATEGY_RANGE)
    fail(ERRCODE_FEATURE_NOT_SUPPORTED,
         fmt::format("\"{}\" is partitioned by {}, not by RANGE", name,
                     key->strategy == PARTITION_STRATEGY_LIST ? "LIST" : "HASH"),
         {}, kShapeHint);
  if (key->partnatts != 1)
    fail(ERRCODE_FEATURE_NOT_SUPPORTED,
         fmt::format("\"{}\" has a partition key of {} columns", name, key->partnatts), {},
         kShapeHint);
  if (key->partattrs[0] == 0)
    fail(ERRCODE_FEATURE_NOT_SUPPORTED,
         fmt::format("the partition key of \"{}\" is an expression, not a column", name), {},
         kShapeHint);
  return key;
}

// The sequence the key column's default draws from: through partheal_nextval
// for this table, or a plain nextval() or identity (which sets
// default_is_plain_nextval). Any other default is refused.
SequenceUse key_sequence(Relation parent, TableShape& shape) {
  SequenceUse use;
  Node* def = guard([&] { return build_column_default(parent, shape.id_attnum); });
  Node* top = partitions::without_implicit_casts(def);
  Oid funcid = top != nullptr && IsA(top, FuncExpr) ? castNode(FuncExpr, top)->funcid : InvalidOid;
  Oid table_arg = InvalidOid;
  Oid sequence_arg = InvalidOid;
  if (partitions::is_partheal_nextval_call(def, &table_arg, &sequence_arg) &&
      table_arg == shape.relid) {
    use.sequence = sequence_arg;
    use.via_partheal = true;
  } else {
    shape.default_is_plain_nextval = funcid == F_NEXTVAL;
    guard([&] { (void)find_sequence(def, &use); });
    // partheal draws the id with nextval() itself and stores what it drew:
    // only a default that is exactly that would store the same.
    bool plain = shape.default_is_plain_nextval || (top != nullptr && IsA(top, NextValueExpr));
    if (use.sequence != InvalidOid && !plain)
      fail(ERRCODE_FEATURE_NOT_SUPPORTED,
           fmt::format("the default of partition key column \"{}\" of \"{}\" is not a plain "
                       "nextval() of a sequence",
                       shape.key_column, shape.name),
           "partheal draws each id with nextval() before it inserts, and stores the id it drew; "
           "an expression around nextval() would make a plain INSERT store a different id.",
           "Declare the column serial, bigserial or GENERATED ... AS IDENTITY, or give it "
           "DEFAULT nextval('sequence').");
  }
  if (use.sequence == InvalidOid)
    fail(ERRCODE_FEATURE_NOT_SUPPORTED,
         fmt::format("partition key column \"{}\" of \"{}\" has no default drawn from a sequence",
                     shape.key_column, shape.name),
         "partheal draws ids from the column's sequence before it inserts, to know which "
         "partitions the rows need.",
         "Declare the column serial, bigserial or GENERATED ... AS IDENTITY.");
  return use;
}

// A time-keyed table's id column, if it has one: the first column by number
// whose default is exactly an identity or a plain nextval(), which
// partheal_append draws itself and returns, as it does a table's id.
void find_id_column(Relation parent, TableShape& shape) {
  TupleDesc desc = RelationGetDescr(parent);
  for (int i = 0; i < desc->natts; ++i) {
    Form_pg_attribute att = TupleDescAttr(desc, i);
    if (att->attisdropped || att->attnum == shape.key_attnum || att->attgenerated != '\0') continue;
    int64 min = 0, max = 0;
    if (!partitions::integer_key_limits(att->atttypid, &min, &max)) continue;
    AttrNumber attnum = att->attnum;
    Node* def = guard([&] { return build_column_default(parent, attnum); });
    Node* top = partitions::without_implicit_casts(def);
    bool plain =
        top != nullptr && (IsA(top, NextValueExpr) ||
                           (IsA(top, FuncExpr) && castNode(FuncExpr, top)->funcid == F_NEXTVAL));
    if (!plain) continue;
    SequenceUse use;
    guard([&] { (void)find_sequence(def, &use); });
    if (use.sequence == InvalidOid) continue;
    shape.id_attnum = attnum;
    shape.id_column = NameStr(att->attname);
    shape.id_type = att->atttypid;
    shape.id_min = min;
    shape.id_max = max;
    shape.identity_always = att->attidentity == ATTRIBUTE_IDENTITY_ALWAYS;
    shape.default_is_plain_nextval = IsA(top, FuncExpr);
    shape.sequence = use.sequence;
    shape.sequence_needs_acl = use.needs_acl;
    return;
  }
}

int64 sequence_increment(Oid sequence) {
  return guard([&] {
    HeapTuple tuple = SearchSysCache1(SEQRELID, ObjectIdGetDatum(sequence));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for sequence %u", sequence);
    int64 increment = reinterpret_cast<Form_pg_sequence>(GETSTRUCT(tuple))->seqincrement;
    ReleaseSysCache(tuple);
    return increment;
  });
}

}  // namespace

TableShape describe(Relation parent) {
  TableShape shape;
  shape.name = RelationGetRelationName(parent);
  if (parent->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
    fail(ERRCODE_WRONG_OBJECT_TYPE, fmt::format("\"{}\" is not a partitioned table", shape.name),
         {}, kShapeHint);

  PartitionKey key = range_key(parent, shape.name);
  static_cast<partitions::Parent&>(shape) = partitions::read_parent(parent);
  shape.key_attnum = key->partattrs[0];
  Form_pg_attribute att = TupleDescAttr(RelationGetDescr(parent), shape.key_attnum - 1);
  shape.key_column = NameStr(att->attname);
  if (partitions::time_key_limits(shape.key_type, &shape.key_min, &shape.key_max)) {
    shape.key_is_time = true;
    find_id_column(parent, shape);
    if (shape.sequence != InvalidOid) shape.sequence_increment = sequence_increment(shape.sequence);
    return shape;
  }
  if (!partitions::integer_key_limits(shape.key_type, &shape.key_min, &shape.key_max))
    fail(ERRCODE_FEATURE_NOT_SUPPORTED,
         fmt::format("partition key column \"{}\" of \"{}\" has type {}", shape.key_column,
                     shape.name, guard([&] { return format_type_be(shape.key_type); })),
         "partheal needs a smallint, integer or bigint key, or a timestamptz, timestamp or date.",
         kShapeHint);

  shape.id_attnum = shape.key_attnum;
  shape.id_column = shape.key_column;
  shape.id_type = shape.key_type;
  shape.id_min = shape.key_min;
  shape.id_max = shape.key_max;
  shape.identity_always = att->attidentity == ATTRIBUTE_IDENTITY_ALWAYS;
  SequenceUse use = key_sequence(parent, shape);
  shape.sequence = use.sequence;
  shape.sequence_needs_acl = use.needs_acl;
  shape.sequence_increment = sequence_increment(use.sequence);
  shape.default_is_partheal_nextval = use.via_partheal;

  return shape;
}

}  // namespace partheal::registry
