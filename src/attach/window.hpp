// What partheal_attach_window works on: a parent partitioned by RANGE on one
// column of any type, and a window [lower, upper) of that column's values.
#pragma once

#include <optional>
#include <string>

#include "pg/postgres.hpp"

namespace partheal::attach {

struct RangeKey {
  std::string column;  // quoted
  Oid type = InvalidOid;
  int32 typmod = -1;
  // The partition key's own btree operators and collation, so that a move
  // selects exactly the rows the partition bound will accept.
  std::string ge_operator;  // OPERATOR(schema.>=)
  std::string lt_operator;  // OPERATOR(schema.<)
  std::string collate;      // " COLLATE schema.name", or empty
};

struct Parent {
  Oid relid = InvalidOid;
  std::string schema;
  std::string name;
  Oid owner = InvalidOid;
  RangeKey key;
  Oid default_relid = InvalidOid;  // no DEFAULT partition when invalid
  std::string default_sql;         // schema.name, quoted
  std::string default_schema;
  std::string default_name;
  bool default_is_foreign = false;
  bool default_is_partitioned = false;
  std::string columns;  // the columns a move copies, quoted: generated ones are recomputed
};

struct Window {
  Datum lower = 0;
  Datum upper = 0;
  std::string lower_literal;  // for FOR VALUES FROM (...) TO (...)
  std::string upper_literal;
  std::string suffix;  // "_p20260101", what a created table's name ends in
};

// Checks that the caller owns the parent (42501) and that it is partitioned
// by RANGE on one column (42809, 0A000), and describes it as committed now.
Parent describe_parent(Oid relid);

// The window from the caller's text, cast to the key type under the caller's
// settings: a bad bound gets that type's own error. lower >= upper is 22023.
Window window_from_text(const Parent& parent, const std::string& lower, const std::string& upper);
// The window from values of the key type.
Window window_from_values(const Parent& parent, Datum lower, Datum upper);

// The attached partition whose bounds are exactly the window's, if any. A
// window that overlaps an attached partition in any other way is 42P17.
std::optional<Oid> partition_with_bounds(const Parent& parent, const Window& window);

// [lower, upper) cut to the gap between attached partitions that holds
// `key`, a value no attached partition takes. For keys passed by value (the
// drain's integer and time keys): a bound it returns is a copy of the value.
void clip_to_gap(const Parent& parent, Datum key, Datum& lower, Datum& upper);

// "key >= $1 AND key < $2", for statements that take the window as $1, $2.
std::string window_predicate(const Parent& parent);

}  // namespace partheal::attach
