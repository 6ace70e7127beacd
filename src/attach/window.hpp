// What partheal_attach_window works on: a parent partitioned by RANGE on one
// column of any type, and a window [lower, upper) of that column's values.
#pragma once

#include <optional>
#include <string>

#include "partitions/parent.hpp"
#include "partitions/range_key.hpp"
#include "pg/postgres.hpp"

namespace partheal::attach {

// The parent as the attach sees it: partitions' model of it, with the key's
// own operators and the columns a move copies.
struct Parent : partitions::Parent {
  partitions::RangeKey key;
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
// describe_parent in two: the parent opened under ACCESS SHARE, after the
// ownership check and a polled lock wait (55P03 once it is spent; 0A000
// for a temporary table); then described, its partitions as committed now.
// For a caller that reads more of the parent in the same open (the
// worker's drain: its registration and windows), and closes it.
Relation open_parent(Oid relid);
Parent describe_opened(Relation rel);

// The window from the caller's text, cast to the key type under the caller's
// settings: a bad bound gets that type's own error. lower >= upper is 22023.
Window window_from_text(const Parent& parent, const std::string& lower, const std::string& upper);
// The window from values of the key type.
Window window_from_values(const Parent& parent, Datum lower, Datum upper);

// The window as the partitions layer takes it.
partitions::ValueRange value_range(const Window& window);

// "key >= $1 AND key < $2", for statements that take the window as $1, $2.
std::string window_predicate(const Parent& parent);

}  // namespace partheal::attach
