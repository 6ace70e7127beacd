// How to insert into one managed table: its columns' input functions and the
// prepared INSERT for each set of columns seen. Kept while the table has the
// name and columns it was made for; dropped with the registry's entry.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "registry/registry.hpp"

extern "C" {
#include "executor/spi.h"
#include "nodes/execnodes.h"
}

namespace partheal::append {

struct Column {
  AttrNumber attnum = InvalidAttrNumber;
  std::string name;
  Oid type = InvalidOid;
  int32 typmod = -1;
  bool is_json = false;  // json and jsonb take a value's JSON text, strings quoted
  bool is_domain = false;
  bool is_integer = false;        // smallint, integer or bigint, or a domain over one
  Oid element_type = InvalidOid;  // of an array type (or a domain over one)
  bool element_is_json = false;
  bool element_is_integer = false;
  char element_delimiter = ',';  // typdelim: ';' for box[]
  bool not_null = false;
  bool has_default = false;  // a default, an identity or a generated expression
  bool generated = false;    // GENERATED ALWAYS AS (...) STORED: no row may name it
  char identity = '\0';      // attidentity: 'a' GENERATED ALWAYS, 'd' BY DEFAULT
  bool domain_has_default = false;
  FmgrInfo input{};
  Oid ioparam = InvalidOid;
  Oid array_type = InvalidOid;
  // A type with no array type of its own (an array type) goes into a batch
  // as text, cast back in the INSERT.
  FmgrInfo output{};
  std::string cast_to;  // the qualified type name, for such a type only
  int16 typlen = 0;
  bool typbyval = false;
  char typalign = 'i';
};

// The columns' defaults as the INSERT's planner adds them for a row that
// does not name the column (an identity's next value, the column's default,
// its domain's), planned once for one user and kept until a function, a
// role, a role membership or a type changes (a replaced body may have been
// inlined, a domain's default folded, EXECUTE decided an inlining). Only
// the planned expressions are kept: each call builds its own ExprStates
// from them, as each execution of a prepared INSERT does, so EXECUTE and a
// domain's constraints are checked then and no state is shared between
// calls.
class PlannedDefaults {
 public:
  PlannedDefaults(uint64_t generation, Oid user, size_t columns);
  PlannedDefaults(const PlannedDefaults&) = delete;
  PlannedDefaults& operator=(const PlannedDefaults&) = delete;
  ~PlannedDefaults();

  bool current(uint64_t generation, Oid user) const {
    return generation == generation_ && user == user_;
  }
  // The planned default of column `index` (planned on first use), nullptr
  // for none: the row's value is then NULL.
  Expr* get(Relation parent, const struct Column& column, int index);

 private:
  uint64_t generation_;
  Oid user_;
  MemoryContext context_ = nullptr;
  std::vector<Expr*> planned_;
  std::vector<bool> built_;
};

class Target {
 public:
  Target(registry::TablePtr table, Relation parent);
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;
  ~Target();

  const registry::ManagedTable& table() const { return *table_; }
  // The column a JSON key names; throws 42703 when there is none.
  int column_index(const std::string& key) const;
  const Column& column(int index) const { return columns_[index]; }
  int column_count() const { return static_cast<int>(columns_.size()); }
  int key_index() const { return key_index_; }
  // The column partheal draws and returns ids for (the key of an id-keyed
  // table); -1 for a time-keyed table without one.
  int id_index() const { return id_index_; }

  // The planned defaults this call's rows take: held for the whole call,
  // so that a nested call (a default that appends) or an invalidation
  // meanwhile frees nothing it uses.
  std::shared_ptr<PlannedDefaults> defaults();

  // Whether the table has a generated column, which a direct insert does
  // not compute.
  bool has_generated() const { return has_generated_; }

  // True while the table has the name and columns this target was made
  // for: a new partition leaves both alone, and the plans stay.
  bool still_fits(const registry::ManagedTable& now, Relation parent) const;

  // The INSERT for these columns (indexes, in attnum order): VALUES for a
  // single row, unnest() of one array per column for a batch; with
  // `returning`, RETURNING the key.
  SPIPlanPtr plan(const std::vector<int>& columns, bool batch, bool returning);

 private:
  registry::TablePtr table_;         // the registration as it was when made
  MemoryContext context_ = nullptr;  // owns the input functions' state and desc_
  TupleDesc desc_ = nullptr;
  std::vector<Column> columns_;
  std::unordered_map<std::string, int> by_name_;
  int key_index_ = -1;
  int id_index_ = -1;
  bool has_generated_ = false;
  std::shared_ptr<PlannedDefaults> defaults_;
  std::map<std::string, SPIPlanPtr> plans_;
  // The plan the last call used, one of plans_.
  std::vector<int> last_columns_;
  bool last_batch_ = false;
  bool last_returning_ = false;
  SPIPlanPtr last_plan_ = nullptr;

  SPIPlanPtr plan_for(const std::string& key, const std::vector<int>& columns, bool batch,
                      bool returning);
};

// The target of an opened, locked, managed parent. The caller holds it for
// the whole call: user code run by the INSERT (a trigger, a default) may
// append to other tables, and the cache may drop this target meanwhile; its
// plans are freed only when the last holder lets go.
std::shared_ptr<Target> target_for(const registry::TablePtr& table, Relation parent);

}  // namespace partheal::append
