// partheal_append(parent regclass, rows jsonb) RETURNS SETOF bigint
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <vector>

#include "ahead/mark.hpp"
#include "append/direct_insert.hpp"
#include "append/on_coordinator.hpp"
#include "append/rows.hpp"
#include "append/target.hpp"
#include "partitions/catalog.hpp"
#include "heal/explicit_ids.hpp"
#include "heal/heal_loop.hpp"
#include "worker/requests.hpp"
#include "registry/registry.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/spi.hpp"
#include "settings.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"
#include "utils/datum.h"
#include "executor/executor.h"
}

namespace partheal::append {

namespace {

Datum key_datum(int64 v, Oid type) {
  switch (type) {
    case INT2OID:
      return Int16GetDatum(static_cast<int16>(v));
    case INT4OID:
      return Int32GetDatum(static_cast<int32>(v));
    default:
      return Int64GetDatum(v);
  }
}

// The ids the insert will use, known before it runs: the heal covers exactly
// these, never a guess from MAX(id) or the sequence's last_value.
// A role with column-level INSERT grants passed the table check with one
// column; the columns the INSERT will name, the id among them, are checked
// now, before any id is drawn or partition made, as the INSERT would.
void check_column_privileges(const Target& target, const Rows& rows, bool table_insert) {
  if (table_insert) return;
  const registry::TableShape& shape = target.table().shape;
  for (int c : rows.columns) {
    AttrNumber attnum = target.column(c).attnum;
    const char* name = shape.name.c_str();
    pg::guard([&] {
      if (pg_attribute_aclcheck(shape.relid, attnum, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
        aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, name);
    });
  }
}

// The ids rows give, checked as INSERT would check them, before the first
// draw: a sequence does not give back what a call that then fails drew.
std::vector<int64> given_ids(const registry::TableShape& shape, Rows& rows) {
  std::vector<int64> given;
  if (rows.id_position < 0) return given;
  for (int r = 0; r < rows.count; ++r) {
    if (!rows.id_given[r]) continue;
    if (shape.identity_always)
      pg::fail(ERRCODE_GENERATED_ALWAYS,
               fmt::format("cannot insert a non-DEFAULT value into column \"{}\"", shape.id_column),
               fmt::format("Column \"{}\" is an identity column defined as GENERATED ALWAYS.",
                           shape.id_column),
               "Leave the id out of the rows; partheal draws it from the sequence.");
    if (rows.null(rows.id_position, r) == 'n')
      pg::fail(ERRCODE_NOT_NULL_VIOLATION,
               fmt::format("row {} gives a null \"{}\"", r + 1, shape.id_column), {},
               "Leave the id out of a row to draw it from the sequence.");
    given.push_back(partitions::key_to_int64(rows.value(rows.id_position, r), shape.id_type));
  }
  return given;
}

std::vector<int64> draw_ids(const registry::TableShape& shape, Rows& rows) {
  if (rows.id_position < 0) return {};
  std::vector<int64> ids(rows.count);
  for (int r = 0; r < rows.count; ++r) {
    Datum& d = rows.value(rows.id_position, r);
    if (rows.id_given[r]) {
      ids[r] = partitions::key_to_int64(d, shape.id_type);
      continue;
    }
    int64 id =
        pg::guard([&] { return nextval_internal(shape.sequence, shape.sequence_needs_acl); });
    ids[r] = id;
    // A sequence past the key type's range fails as the column default would.
    d = pg::guard([&] {
      if (id < shape.id_min || id > shape.id_max)
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("%s out of range", format_type_be(shape.id_type))));
      return key_datum(id, shape.id_type);
    });
    rows.null(rows.id_position, r) = ' ';
  }
  return ids;
}

// A column default evaluated once per row, as the INSERT would, from an
// ExprState built for this call alone.
class RowDefault {
 public:
  explicit RowDefault(Expr* planned) {
    pg::guard([&] {
      state_ = ExecInitExpr(planned, nullptr);
      econtext_ = CreateStandaloneExprContext();
    });
  }
  RowDefault(const RowDefault&) = delete;
  RowDefault& operator=(const RowDefault&) = delete;
  // Freeing the context runs no callback (a default has no set-returning
  // function) and cannot raise.
  ~RowDefault() { FreeExprContext(econtext_, true); }

  // False for a NULL; the value is copied out of the row's memory.
  bool next(const Column& column, Datum* value) {
    bool isnull = false;
    ExprState* state = state_;
    ExprContext* econtext = econtext_;
    *value = pg::guard([&] {
      Datum d = ExecEvalExprSwitchContext(state, econtext, &isnull);
      if (!isnull) d = datumCopy(d, column.typbyval, column.typlen);
      ResetExprContext(econtext);
      return d;
    });
    return !isnull;
  }

 private:
  ExprState* state_ = nullptr;
  ExprContext* econtext_ = nullptr;
};

// A time-keyed table's keys, known before the insert as ids are: the value
// a row gives, or the column default evaluated for the row in the backend
// (now() is the transaction's time), which the INSERT then stores as given.
std::vector<int64> time_keys(Target& target, Relation parent, Rows& rows,
                             PlannedDefaults& defaults) {
  const registry::TableShape& shape = target.table().shape;
  const Column& key = target.column(target.key_index());
  std::vector<int64> keys(rows.count);
  std::optional<RowDefault> key_default;
  bool looked = false;
  for (int r = 0; r < rows.count; ++r) {
    Datum& d = rows.value(rows.key_position, r);
    char& null = rows.null(rows.key_position, r);
    if (rows.key_given[r] && null == 'n')
      pg::fail(ERRCODE_NOT_NULL_VIOLATION,
               fmt::format("row {} gives a null \"{}\"", r + 1, shape.key_column),
               "A row with a null partition key has no partition to go to.",
               "Leave the key out of a row to take the column's default.");
    if (!rows.key_given[r]) {
      if (!looked) {
        if (Expr* planned = defaults.get(parent, key, target.key_index()))
          key_default.emplace(planned);
        looked = true;
      }
      if (!key_default || !key_default->next(key, &d))
        pg::fail(
            ERRCODE_NOT_NULL_VIOLATION,
            fmt::format("row {} gives no \"{}\", and its default is null", r + 1, shape.key_column),
            "A row with a null partition key has no partition to go to.",
            fmt::format("Give \"{}\" in every row, or give the column a default such as "
                        "now().",
                        shape.key_column));
      null = ' ';
    }
    keys[r] = partitions::key_to_int64(d, shape.key_type);
  }
  return keys;
}

// One array per column, for the batch plan's unnest().
void as_arrays(const Target& target, Rows& rows, std::vector<Datum>& values,
               std::vector<char>& nulls) {
  size_t ncolumns = rows.columns.size();
  values.assign(ncolumns, Datum(0));
  nulls.assign(ncolumns, ' ');
  std::unique_ptr<bool[]> isnull(new bool[rows.count]);
  for (size_t p = 0; p < ncolumns; ++p) {
    const Column& c = target.column(rows.columns[p]);
    for (int r = 0; r < rows.count; ++r) isnull[r] = rows.null(static_cast<int>(p), r) == 'n';
    Datum* column_values = &rows.value(static_cast<int>(p), 0);
    bool* column_nulls = isnull.get();
    int count = rows.count;
    values[p] = pg::guard([&] {
      int dims[1] = {count};
      int lbs[1] = {1};
      if (c.cast_to.empty())
        return PointerGetDatum(construct_md_array(column_values, column_nulls, 1, dims, lbs, c.type,
                                                  c.typlen, c.typbyval, c.typalign));
      // A type without an array type travels as its own text, which its
      // input function already accepted once.
      Datum* texts = static_cast<Datum*>(palloc0(sizeof(Datum) * count));
      for (int r = 0; r < count; ++r)
        if (!column_nulls[r])
          texts[r] = CStringGetTextDatum(
              OutputFunctionCall(const_cast<FmgrInfo*>(&c.output), column_values[r]));
      return PointerGetDatum(
          construct_md_array(texts, column_nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT));
    });
  }
}

// RETURNING reads what was stored: it needs SELECT on the key, and under
// row-level security it would add the SELECT policies as checks that a
// plain INSERT does not make. Without both, the caller gets the ids drawn.
bool may_read_key(const registry::ManagedTable& table, Relation parent) {
  const registry::TableShape& shape = table.shape;
  if (parent->rd_rel->relrowsecurity) return false;
  return pg::guard([&] {
    Oid user = GetUserId();
    return pg_class_aclcheck(shape.relid, user, ACL_SELECT) == ACLCHECK_OK ||
           pg_attribute_aclcheck(shape.relid, shape.id_attnum, user, ACL_SELECT) == ACLCHECK_OK;
  });
}

// The ids stored; for a table without an id column, one NULL per row stored.
// One row, the single-row append's answer, is returned as the value itself:
// a value-per-call result left at ExprSingleResult is the set's only row,
// both in a select list and in FROM, with no tuplestore to build and free.
// Any other count, and a caller that takes no set (whose error
// InitMaterializedSRF raises), goes through a materialized result.
Datum return_ids(FunctionCallInfo fcinfo, const std::vector<int64>& ids, uint64 null_rows) {
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  if (ids.size() + null_rows == 1 && rsinfo != nullptr && IsA(rsinfo, ReturnSetInfo) &&
      (rsinfo->allowedModes & SFRM_ValuePerCall) != 0) {
    rsinfo->returnMode = SFRM_ValuePerCall;
    rsinfo->isDone = ExprSingleResult;
    if (ids.empty()) {
      fcinfo->isnull = true;
      return Datum(0);
    }
    fcinfo->isnull = false;
    return Int64GetDatum(ids.front());
  }
  pg::guard([&] {
    InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
    for (int64 id : ids) {
      Datum value = Int64GetDatum(id);
      bool isnull = false;
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
    }
    for (uint64 i = 0; i < null_rows; ++i) {
      Datum value = 0;
      bool isnull = true;
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
    }
  });
  return Datum(0);
}

[[noreturn]] void null_argument(const char* name) {
  pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, fmt::format("{} must not be NULL", name), {},
           "partheal_append(parent regclass, rows jsonb) takes a table and a JSON object or "
           "array of objects.");
}

}  // namespace

}  // namespace partheal::append

using namespace partheal;

PARTHEAL_SQL_FUNCTION(partheal_append) {
  settings::require_preloaded();
  if (PG_ARGISNULL(0)) append::null_argument("parent");
  if (PG_ARGISNULL(1)) append::null_argument("rows");
  Oid relid = PG_GETARG_OID(0);
  Jsonb* json = pg::guard([&] { return PG_GETARG_JSONB_P(1); });
  // A heal's partition is committed by the worker and outlives this
  // transaction, whose INSERT a READ ONLY transaction would then refuse:
  // refuse first, before anything is created.
  pg::guard([] { PreventCommandIfReadOnly("partheal_append()"); });

  // The lock a plain INSERT takes, after its privilege check; the lock also
  // keeps partitions from being dropped or detached (non-concurrently)
  // between the check and the insert.
  registry::Opened opened = registry::open_for_insert(relid);
  Relation parent = opened.parent;
  registry::TablePtr table = opened.table;

  std::shared_ptr<append::Target> held = append::target_for(table, parent);
  append::Target& target = *held;
  // The defaults rows take, planned for this user, held for this call.
  std::shared_ptr<append::PlannedDefaults> defaults = target.defaults();
  const bool before_row_triggers =
      parent->trigdesc != nullptr && parent->trigdesc->trig_insert_before_row;
  append::Rows rows = append::read_rows(target, json, before_row_triggers);
  append::check_column_privileges(target, rows, opened.table_insert);
  std::vector<int64> given = append::given_ids(table->shape, rows);
  const bool by_time = table->shape.key_is_time;
  // The keys the heal covers: the ids, or a time-keyed table's times.
  std::vector<int64> keys;
  if (by_time) {
    keys = append::time_keys(target, parent, rows, *defaults);
    // Past the retention first: the owner could not have it made either.
    heal::refuse_keys_past_retention(*table, parent, keys);
    heal::refuse_far_windows(*table, parent, keys);
  } else {
    // Before any id is drawn: given ids far from the sequence would let a
    // role that does not own the table make partitions without bound.
    heal::refuse_keys_past_retention(*table, parent, given);
    heal::refuse_explicit_ids_out_of_window(*table, parent, given);
  }
  std::vector<int64> ids = append::draw_ids(table->shape, rows);
  if (!by_time) keys = ids;

  bool batch = rows.count > 1;
  std::vector<Datum> values;
  std::vector<char> nulls;
  if (batch) {
    append::as_arrays(target, rows, values, nulls);
  } else {
    values = rows.values;
    nulls = rows.nulls;
  }

  // What is returned is what was stored, as INSERT ... RETURNING says: a
  // BEFORE trigger may change an id, or skip a row. Without such triggers
  // the ids drawn are the ids stored, and no RETURNING is needed.
  bool returning =
      before_row_triggers && rows.id_position >= 0 && append::may_read_key(*table, parent);
  // A single row into a table whose INSERT is only routing, constraints and
  // indexes goes in directly (append/direct_insert), with no SPI at all.
  // Otherwise SPI is connected for the whole loop, outside its
  // subtransactions, whose end would close a connection made inside them;
  // a direct insert's fallback (a partition with triggers of its own)
  // connects, inserts and finishes within the one attempt, as it needs no
  // RETURNING rows after it.
  const bool direct = !batch && !returning && append::direct_insert_fits(target, parent, rows);
  // No search_path is pinned here: every name in the INSERT is qualified and
  // it has no operators, so the path cannot change what it means, while the
  // table's own triggers and defaults see the session's path, as with INSERT.
  if (!direct) pg::spi::connect();
  SPIPlanPtr prepared = nullptr;
  auto spi_plan = [&] {
    if (prepared == nullptr) prepared = target.plan(rows.columns, batch, returning);
    return prepared;
  };
  std::vector<int64> stored = ids;
  uint64 inserted = 0;
  // A worker node tells the coordinator which ids the rows gave.
  const heal::MakePartition make =
      append::partition_maker(*table, by_time ? std::vector<int64>() : given);
  heal::insert_until_covered(*table, parent, keys, make, [&] {
    if (direct) {
      if (append::insert_one_direct(target, parent, rows, *defaults)) {
        inserted = 1;
        return;
      }
      pg::spi::connect();
      inserted = pg::spi::execute_plan(spi_plan(), values.data(), nulls.data(), SPI_OK_INSERT);
      pg::spi::finish();
      return;
    }
    SPIPlanPtr plan = spi_plan();
    if (!returning) {
      inserted = pg::spi::execute_plan(plan, values.data(), nulls.data(), SPI_OK_INSERT);
      return;
    }
    uint64 n = pg::spi::execute_plan(plan, values.data(), nulls.data(), SPI_OK_INSERT_RETURNING);
    stored.clear();
    for (uint64 i = 0; i < n; ++i)
      if (std::optional<Datum> id = pg::spi::value(i, 1))
        stored.push_back(partitions::key_to_int64(*id, table->shape.id_type));
  });
  if (!direct) pg::spi::finish();
  const bool has_ids = rows.id_position >= 0;
  if (!has_ids) stored.clear();
  const uint64 stored_rows = has_ids ? stored.size() : inserted;
  std::vector<int64> drawn;
  for (int r = 0; r < rows.count && !by_time; ++r)
    if (!rows.id_given[r]) drawn.push_back(ids[r]);
  // A time-keyed table's next window comes by the clock (ahead/clock), not
  // by the ids its rows draw.
  ahead::after_append(*table,
                      by_time
                          ? std::vector<int64>()
                          : ahead::mark_ids_in_use(*table, parent->rd_rel->relowner, drawn, given),
                      stored_rows);
  pg::guard([&] { relation_close(parent, NoLock); });

  return append::return_ids(fcinfo, stored, has_ids ? 0 : inserted);
}
