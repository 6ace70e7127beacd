#include <fmt/format.h>

#include <iterator>
#include <memory>
#include <utility>

#include "append/target.hpp"
#include "pg/boundary.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "access/tupdesc.h"
}

namespace partheal::append {

namespace {}  // namespace

Target::Target(manage::TablePtr table, Relation parent) : table_(std::move(table)) {
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
    c.is_json = c.type == JSONOID || c.type == JSONBOID;
    c.not_null = att->attnotnull;
    pg::guard([&] {
      Oid input_fn = InvalidOid;
      getTypeInputInfo(c.type, &input_fn, &c.ioparam);
      fmgr_info_cxt(input_fn, &c.input, context_);
      get_typlenbyvalalign(c.type, &c.typlen, &c.typbyval, &c.typalign);
      c.array_type = get_array_type(c.type);
    });
    if (c.attnum == table_->shape.key_attnum) key_index_ = static_cast<int>(columns_.size());
    by_name_.emplace(c.name, static_cast<int>(columns_.size()));
    columns_.push_back(std::move(c));
  }
}

Target::~Target() {
  // Plans and contexts are PostgreSQL memory; freeing them cannot raise.
  for (auto& [key, plan] : plans_) SPI_freeplan(plan);
  if (context_ != nullptr) MemoryContextDelete(context_);
}

bool Target::still_fits(const manage::ManagedTable& now, Relation parent) const {
  const manage::TableShape& was = table_->shape;
  if (now.shape.schema != was.schema || now.shape.name != was.name ||
      now.shape.identity_always != was.identity_always)
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
  std::string key = std::string(batch ? "b" : "s") + (returning ? "r" : "");
  for (int c : columns) key += fmt::format(",{}", c);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;

  std::string names, args, unnests;
  std::vector<Oid> types;
  for (size_t i = 0; i < columns.size(); ++i) {
    const Column& c = columns_[columns[i]];
    if (batch && c.array_type == InvalidOid)
      pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
               fmt::format("column \"{}\" has a type without an array type", c.name),
               "partheal passes a batch as one array per column.",
               "Append these rows one at a time.");
    names += (i ? ", " : "") + pg::quoted(c.name);
    args += fmt::format("{}${}", i ? ", " : "", i + 1);
    unnests += fmt::format("{}pg_catalog.unnest(${})", i ? ", " : "", i + 1);
    types.push_back(batch ? c.array_type : c.type);
  }
  // Every name is qualified, so the statement means the same whatever the
  // caller's search_path.
  std::string sql =
      fmt::format("INSERT INTO {}.{} ({}) {}{}{}", pg::quoted(table_->shape.schema),
                  pg::quoted(table_->shape.name), names,
                  table_->shape.identity_always ? "OVERRIDING SYSTEM VALUE " : "",
                  batch ? fmt::format("SELECT * FROM ROWS FROM ({})", unnests)
                        : fmt::format("VALUES ({})", args),
                  returning ? " RETURNING " + pg::quoted(table_->shape.key_column) : std::string());
  SPIPlanPtr plan = pg::spi::prepare_kept(sql, static_cast<int>(types.size()), types.data());
  plans_.emplace(key, plan);
  return plan;
}

std::shared_ptr<Target> target_for(const manage::TablePtr& table, Relation parent) {
  // Never destroyed: a Target frees SPI plans, which must not happen from a
  // static destructor at exit().
  static auto* targets = new std::unordered_map<Oid, std::shared_ptr<Target>>();
  static uint64_t forgotten_seen = 0;
  if (manage::forgotten_count() != forgotten_seen) {
    forgotten_seen = manage::forgotten_count();
    for (auto it = targets->begin(); it != targets->end();)
      it = manage::is_cached(it->first) ? std::next(it) : targets->erase(it);
  }
  std::shared_ptr<Target>& target = (*targets)[table->shape.relid];
  if (target == nullptr || !target->still_fits(*table, parent))
    target = std::make_shared<Target>(table, parent);
  return target;
}

}  // namespace partheal::append
