#include <fmt/format.h>

#include <iterator>
#include <memory>
#include <utility>

#include "append/target.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "access/tupdesc.h"
#include "miscadmin.h"
#include "utils/inval.h"
#include "utils/syscache.h"
#include "utils/datum.h"
#include "executor/executor.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
}

namespace partheal::append {

namespace {

// Counts changes this backend has seen, from 1, to what a planned default
// depends on: any function (pg_proc: a new body, new grants, a new
// volatility), any role or role membership (pg_authid, pg_auth_members:
// whether the planner could inline a function depends on EXECUTE), and any
// type (pg_type: a domain's default, folded in).
uint64_t generation = 1;

void on_default_dependency_change(Datum, pg::compat::SyscacheId, uint32) noexcept {
  ++generation;
}

uint64_t defaults_generation() {
  static bool registered = false;
  if (!registered) {
    pg::guard([] {
      CacheRegisterSyscacheCallback(PROCOID, on_default_dependency_change, Datum(0));
      CacheRegisterSyscacheCallback(AUTHOID, on_default_dependency_change, Datum(0));
      CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, on_default_dependency_change, Datum(0));
      CacheRegisterSyscacheCallback(TYPEOID, on_default_dependency_change, Datum(0));
    });
    registered = true;
  }
  return generation;
}

}  // namespace

Target::Target(registry::TablePtr table, Relation parent) : table_(std::move(table)) {
  context_ = pg::guard([] {
    return AllocSetContextCreate(CacheMemoryContext, "partheal append target",
                                 ALLOCSET_SMALL_SIZES);
  });
  TupleDesc desc = RelationGetDescr(parent);
  desc_ = pg::guard([&] {
    MemoryContext old = MemoryContextSwitchTo(context_);
    TupleDesc copy = CreateTupleDescCopyConstr(desc);
    MemoryContextSwitchTo(old);
    return copy;
  });
  for (int i = 0; i < desc->natts; ++i) {
    Form_pg_attribute att = TupleDescAttr(desc, i);
    if (att->attisdropped) continue;
    Column c;
    c.attnum = att->attnum;
    c.name = NameStr(att->attname);
    c.type = att->atttypid;
    c.typmod = att->atttypmod;
    c.not_null = att->attnotnull;
    c.has_default = att->atthasdef || att->attidentity != '\0' || att->attgenerated != '\0';
    c.generated = att->attgenerated != '\0';
    c.identity = att->attidentity;
    Oid base = pg::guard([&] { return getBaseType(c.type); });
    c.is_domain = base != c.type;
    c.is_json = base == JSONOID || base == JSONBOID;
    c.is_integer = base == INT2OID || base == INT4OID || base == INT8OID;
    const char* cast_to = nullptr;
    pg::guard([&] {
      Oid input_fn = InvalidOid;
      getTypeInputInfo(c.type, &input_fn, &c.ioparam);
      fmgr_info_cxt(input_fn, &c.input, context_);
      get_typlenbyvalalign(c.type, &c.typlen, &c.typbyval, &c.typalign);
      c.array_type = get_array_type(c.type);
      c.element_type = get_element_type(base);
      if (c.element_type != InvalidOid) {
        int16 len = 0;
        bool byval = false;
        char align = 'i';
        Oid ioparam = InvalidOid, func = InvalidOid;
        get_type_io_data(c.element_type, IOFunc_input, &len, &byval, &align, &c.element_delimiter,
                         &ioparam, &func);
      }
      c.domain_has_default = c.is_domain && get_typdefault(c.type) != nullptr;
      if (c.array_type == InvalidOid) {
        Oid output_fn = InvalidOid;
        bool varlena = false;
        getTypeOutputInfo(c.type, &output_fn, &varlena);
        fmgr_info_cxt(output_fn, &c.output, context_);
        cast_to = format_type_be_qualified(c.type);
      }
    });
    Oid element_base = c.element_type == InvalidOid
                           ? InvalidOid
                           : pg::guard([&] { return getBaseType(c.element_type); });
    c.element_is_json = element_base == JSONOID || element_base == JSONBOID;
    c.element_is_integer =
        element_base == INT2OID || element_base == INT4OID || element_base == INT8OID;
    if (cast_to != nullptr) c.cast_to = cast_to;
    if (c.attnum == table_->shape.key_attnum) key_index_ = static_cast<int>(columns_.size());
    if (c.attnum == table_->shape.id_attnum) id_index_ = static_cast<int>(columns_.size());
    if (c.generated) has_generated_ = true;
    by_name_.emplace(c.name, static_cast<int>(columns_.size()));
    columns_.push_back(std::move(c));
  }
}

Target::~Target() {
  // Plans and contexts are PostgreSQL memory; freeing them cannot raise.
  for (auto& [key, plan] : plans_) SPI_freeplan(plan);
  if (context_ != nullptr) MemoryContextDelete(context_);
}

PlannedDefaults::PlannedDefaults(uint64_t generation, Oid user, size_t columns)
    : generation_(generation), user_(user), planned_(columns, nullptr), built_(columns, false) {
  context_ = pg::guard([] {
    return AllocSetContextCreate(CacheMemoryContext, "partheal planned defaults",
                                 ALLOCSET_SMALL_SIZES);
  });
}

PlannedDefaults::~PlannedDefaults() {
  // PostgreSQL memory; freeing it cannot raise.
  if (context_ != nullptr) MemoryContextDelete(context_);
}

Expr* PlannedDefaults::get(Relation parent, const Column& column, int index) {
  if (built_[index]) return planned_[index];
  // A generated column's expression is not a default: the INSERT computes
  // it, after the row's other values.
  MemoryContext cxt = context_;
  Expr* planned = column.generated ? nullptr : pg::guard([&] {
    MemoryContext old = MemoryContextSwitchTo(cxt);
    Node* def = build_column_default(parent, column.attnum);
    Expr* out = def == nullptr ? nullptr : expression_planner((Expr*)def);
    MemoryContextSwitchTo(old);
    return out;
  });
  planned_[index] = planned;
  built_[index] = true;
  return planned;
}

std::shared_ptr<PlannedDefaults> Target::defaults() {
  const uint64_t now = defaults_generation();
  const Oid user = pg::guard([] { return GetUserId(); });
  // A set still held by a running call stays its own; a new one serves
  // the calls from now on.
  if (defaults_ == nullptr || !defaults_->current(now, user))
    defaults_ = std::make_shared<PlannedDefaults>(now, user, columns_.size());
  return defaults_;
}

bool Target::still_fits(const registry::ManagedTable& now, Relation parent) const {
  const registry::TableShape& was = table_->shape;
  if (now.shape.schema != was.schema || now.shape.name != was.name ||
      now.shape.identity_always != was.identity_always || now.shape.citus != was.citus)
    return false;
  TupleDesc desc = RelationGetDescr(parent);
  return desc == desc_ || pg::guard([&] { return equalTupleDescs(desc, desc_); });
}

int Target::column_index(const std::string& key) const {
  auto it = by_name_.find(key);
  if (it != by_name_.end()) return it->second;
  pg::fail(ERRCODE_UNDEFINED_COLUMN,
           fmt::format("column \"{}\" of relation \"{}\" does not exist", key, table_->shape.name),
           "Each key of a row must name a column of the table.");
}

SPIPlanPtr Target::plan(const std::vector<int>& columns, bool batch, bool returning) {
  // A writer sends the same shape of rows call after call: the last plan is
  // checked first, without building the key.
  if (last_plan_ != nullptr && last_batch_ == batch && last_returning_ == returning &&
      last_columns_ == columns)
    return last_plan_;
  std::string key = std::string(batch ? "b" : "s") + (returning ? "r" : "");
  for (int c : columns) key += fmt::format(",{}", c);
  SPIPlanPtr plan = plan_for(key, columns, batch, returning);
  last_columns_ = columns;
  last_batch_ = batch;
  last_returning_ = returning;
  last_plan_ = plan;
  return plan;
}

SPIPlanPtr Target::plan_for(const std::string& key, const std::vector<int>& columns, bool batch,
                            bool returning) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;

  std::string names, args, unnests;
  std::vector<Oid> types;
  for (size_t i = 0; i < columns.size(); ++i) {
    const Column& c = columns_[columns[i]];
    names += (i ? ", " : "") + pg::quoted(c.name);
    args += fmt::format("{}${}", i ? ", " : "", i + 1);
    // In the select list, not in FROM: there a composite column's unnest()
    // would expand into its fields.
    std::string unnest = fmt::format("pg_catalog.unnest(${})", i + 1);
    if (!c.cast_to.empty()) unnest = fmt::format("CAST({} AS {})", unnest, c.cast_to);
    unnests += (i ? ", " : "") + unnest;
    types.push_back(!batch ? c.type : c.cast_to.empty() ? c.array_type : TEXTARRAYOID);
  }
  // Every name is qualified, so the statement means the same whatever the
  // caller's search_path.
  std::string sql =
      fmt::format("INSERT INTO {}.{} ({}) {}{}{}", pg::quoted(table_->shape.schema),
                  pg::quoted(table_->shape.name), names,
                  table_->shape.identity_always ? "OVERRIDING SYSTEM VALUE " : "",
                  batch ? fmt::format("SELECT {}", unnests) : fmt::format("VALUES ({})", args),
                  returning ? " RETURNING " + pg::quoted(table_->shape.id_column) : std::string());
  SPIPlanPtr plan = pg::spi::prepare_kept(sql, static_cast<int>(types.size()), types.data());
  plans_.emplace(key, plan);
  return plan;
}

std::shared_ptr<Target> target_for(const registry::TablePtr& table, Relation parent) {
  // Never destroyed: a Target frees SPI plans, which must not happen from a
  // static destructor at exit().
  static auto* targets = new std::unordered_map<Oid, std::shared_ptr<Target>>();
  static uint64_t forgotten_seen = 0;
  if (registry::forgotten_count() != forgotten_seen) {
    forgotten_seen = registry::forgotten_count();
    for (auto it = targets->begin(); it != targets->end();)
      it = registry::is_cached(it->first) ? std::next(it) : targets->erase(it);
  }
  std::shared_ptr<Target>& target = (*targets)[table->shape.relid];
  if (target == nullptr || !target->still_fits(*table, parent))
    target = std::make_shared<Target>(table, parent);
  return target;
}

}  // namespace partheal::append
