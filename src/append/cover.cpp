// partheal_cover: the heal loop in its cover-only mode for keys the caller
// names. It makes the partitions these key values need, under the limits an
// append of rows with those keys would meet. A Citus worker node's append
// asks it of the coordinator, where the registration and the partitions
// live; a bulk load with ids or times of its own can call it first.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "heal/explicit_ids.hpp"
#include "heal/heal_loop.hpp"
#include "partitions/catalog.hpp"
#include "pg/boundary.hpp"
#include "registry/registry.hpp"
#include "settings.hpp"
#include "append/on_coordinator.hpp"
#include "worker/requests.hpp"
#include "pg/guc_level.hpp"
#include "pg/subxact.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

namespace {

// Keys one call may name: a bound on the work behind one call, whoever makes
// it (the window rules bound the partitions a non-owner gets).
constexpr int kMaxKeys = 10000;

constexpr const char* kSignature =
    "partheal_cover(parent regclass, keys text[]) creates the partitions that rows with these "
    "key values need.";

[[noreturn]] void null_argument(const char* name) {
  partheal::pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, fmt::format("{} must not be NULL", name), {},
                     kSignature);
}

}  // namespace

using namespace partheal;

namespace {

// Who names the keys: a caller of partheal_cover, or a Citus worker node's
// heal, which says whether the caller there gave the key or the node drew
// it from its range of the sequence (a database not yet at 0.8 does not).
enum class Caller { kLocal, kNodeGiven, kNodeDrawn, kNodeUnsaid };

// partheal_cover's work, for both entries: the partitions made.
int32 cover_keys(Oid relid, ArrayType* array, Caller caller) {
  const bool relayed = caller != Caller::kLocal;
  Datum* elements = nullptr;
  bool* nulls = nullptr;
  int count = 0;
  // Counted before the array is taken apart: a huge one is refused without
  // the memory for its elements.
  const int given = pg::guard([&] {
    if (ARR_NDIM(array) > 1)
      ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                      errmsg("keys must be a one-dimensional array")));
    return ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
  });
  if (given > kMaxKeys)
    pg::fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
             fmt::format("partheal_cover takes at most {} keys, not {}", kMaxKeys, given), {},
             "Cover the keys in several calls.");
  pg::guard([&] {
    deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elements, &nulls, &count);
  });
  // Partitions are committed by the worker and outlive this transaction:
  // refuse before anything is created.
  pg::guard([] { PreventCommandIfReadOnly("partheal_cover()"); });
  registry::Opened opened = registry::open_for_insert(relid);
  Relation parent = opened.parent;
  registry::TablePtr table = opened.table;
  const registry::TableShape& shape = table->shape;
  const Oid type = shape.key_type;
  // A role that may insert some columns only covers keys it could insert:
  // the key column's INSERT privilege, as partheal_append checks it.
  if (!opened.table_insert) {
    const AttrNumber key_attnum = shape.key_attnum;
    const char* column = shape.key_column.c_str();
    const char* name = shape.name.c_str();
    pg::guard([&] {
      if (pg_attribute_aclcheck(relid, key_attnum, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
        aclcheck_error_col(ACLCHECK_NO_PRIV, OBJECT_TABLE, name, column);
    });
  }
  // The column's typmod too: a timestamptz(0) stores 07:59:59.6 as 08:00:00,
  // and the partition must be the one the stored value goes to.
  const int32 typmod = TupleDescAttr(RelationGetDescr(parent), shape.key_attnum - 1)->atttypmod;
  std::vector<int64> keys;
  keys.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    if (nulls[i])
      pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, fmt::format("key {} is NULL", i + 1),
               "A row with a null partition key has no partition to go to.", kSignature);
    Datum key_text = elements[i];
    // The key column's own input function and typmod, as an INSERT of the
    // text would read it: the same value, and the same errors for a value
    // that is no key.
    Datum key = pg::guard([&] {
      Oid input = InvalidOid;
      Oid param = InvalidOid;
      getTypeInputInfo(type, &input, &param);
      return OidInputFunctionCall(input, TextDatumGetCString(key_text), param, typmod);
    });
    keys.push_back(partitions::key_to_int64(key, type));
  }
  // The limits partheal_append puts on rows that give their keys. A time
  // key is judged whoever chose it. An id a worker node drew is not held
  // to the retention (as a drawn id is not here), nor to the window of
  // given ids once its node's position is past it, which the window rule
  // checks: only the node's sequence could have given it. A worker node
  // that does not say judged its own range's retention itself.
  if (shape.key_is_time) {
    heal::refuse_keys_past_retention(*table, parent, keys);
    heal::refuse_far_windows(*table, parent, keys);
  } else {
    if (caller == Caller::kLocal || caller == Caller::kNodeGiven)
      heal::refuse_keys_past_retention(*table, parent, keys);
    heal::refuse_explicit_ids_out_of_window(*table, parent, keys, caller == Caller::kNodeDrawn);
  }
  size_t before = partitions::attached_ranges(parent).size();
  // A worker node's heal fails at once during a shard move: its appender
  // may hold there what the move waits for, which this backend cannot see.
  heal::cover(*table, parent, keys,
              relayed ? heal::MakePartition(worker::create_covering_partition_at_once)
                      : append::partition_maker(*table, keys));  // a caller's keys are given
  partitions::refresh_partitions(parent);
  size_t after = partitions::attached_ranges(parent).size();
  pg::guard([&] { relation_close(parent, NoLock); });
  return static_cast<int32>(after > before ? after - before : 0);
}

}  // namespace

// partheal_cover(parent regclass, keys text[]) RETURNS integer
PARTHEAL_SQL_FUNCTION(partheal_cover) {
  settings::require_preloaded();
  if (PG_ARGISNULL(0)) null_argument("parent");
  if (PG_ARGISNULL(1)) null_argument("keys");
  Oid relid = PG_GETARG_OID(0);
  ArrayType* array = pg::guard([&] { return PG_GETARG_ARRAYTYPE_P(1); });
  return Int32GetDatum(cover_keys(relid, array, Caller::kLocal));
}

// partheal_cover_for_node(parent text, keys text[], drawn boolean) RETURNS
// text: what a Citus worker node's heal asks of the coordinator
// (append/on_coordinator); 0.7's has no `drawn`. Citus relays a failed
// command's first message line only, so the outcome comes back as the
// value, a JSON object: {"made": n}, or the error's SQLSTATE, message,
// detail and hint.
PARTHEAL_SQL_FUNCTION(partheal_cover_for_node) {
  settings::require_preloaded();
  if (PG_ARGISNULL(0)) null_argument("parent");
  if (PG_ARGISNULL(1)) null_argument("keys");
  const bool says = PG_NARGS() > 2;
  if (says && PG_ARGISNULL(2)) null_argument("drawn");
  const Caller caller =
      !says ? Caller::kNodeUnsaid : (PG_GETARG_BOOL(2) ? Caller::kNodeDrawn : Caller::kNodeGiven);
  const char* name = pg::guard([&] { return text_to_cstring(PG_GETARG_TEXT_PP(0)); });
  ArrayType* array = pg::guard([&] { return PG_GETARG_ARRAYTYPE_P(1); });
  std::string outcome;
  int32 made = 0;
  bool failed = false;
  // Only the subtransaction's errors are caught: their abort has undone
  // what they left; any other error ends the call.
  bool body_failed = false;
  try {
    pg::in_subtransaction([&] {
      try {
        // The worker node's appender waits for this call in a network wait
        // that no deadlock check sees: every lock wait here is bounded, as
        // partheal's DDL is, so that a cycle through the two nodes (a user's
        // DDL here whose part on that node waits for the appender) ends.
        pg::set_local("lock_timeout", std::to_string(settings::ddl_lock_timeout_ms));
        Oid relid = pg::guard([&] {
          return DatumGetObjectId(DirectFunctionCall1(regclassin, CStringGetDatum(name)));
        });
        made = cover_keys(relid, array, caller);
      } catch (const PgError&) {
        body_failed = true;
        throw;
      }
    });
  } catch (const PgError& e) {
    // The subtransaction's own begin or end failing is no answer to give.
    if (!body_failed) throw;
    outcome = append::relayed_outcome(0, &e);
    failed = true;
  }
  if (!failed) outcome = append::relayed_outcome(made, nullptr);
  const char* out = outcome.c_str();
  return pg::guard([&] { return PointerGetDatum(cstring_to_text(out)); });
}
