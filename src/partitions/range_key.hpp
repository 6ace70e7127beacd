// A RANGE partition key of any type, and the bounds of a parent's
// partitions as values of that type: what partheal_attach_window and its
// drain work with. (Integer keys, which the heal computes with, are read
// as int64 by catalog.hpp.)
#pragma once

#include <optional>
#include <string>

#include "pg/postgres.hpp"

extern "C" {
#include "utils/rel.h"
}

namespace partheal::partitions {

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

// The key of an opened parent: 42809 when it is not partitioned, 0A000
// when it is not partitioned by RANGE on one column. `table` names it.
RangeKey read_range_key(Relation rel, const std::string& table);

// Compares two values of the key with the partition key's own support
// function, as PostgreSQL orders bounds.
int compare_keys(Relation rel, Datum a, Datum b);

struct Literal {
  std::string quoted;
  std::string text;
};
// The value as a quoted literal, written in ISO style so that reading it
// back, in the ATTACH partheal runs next, cannot depend on DateStyle.
Literal literal_of(Oid type, Datum value);

// The name suffix of a partition whose lower bound is `text` (literal_of's
// text): value_suffix in key_space.hpp, told whether the type is a time.
std::string suffix_of_value(Oid type, const std::string& text);

// [lower, upper) as values of the key, and as literals for messages and DDL.
struct ValueRange {
  Datum lower = 0;
  Datum upper = 0;
  std::string lower_literal;
  std::string upper_literal;
};

// The attached partition whose bounds are exactly `range`'s, if any. A
// range that overlaps an attached partition (or one pending DETACH
// CONCURRENTLY) in any other way is 42P17. `parent_name` is for messages.
std::optional<Oid> partition_with_bounds(Oid parent, const std::string& parent_name,
                                         const ValueRange& range);

// [lower, upper) cut to the gap between attached partitions that holds
// `key`, a value no attached partition takes. For keys passed by value (the
// drain's integer and time keys): a bound it returns is a copy of the value.
void clip_to_gap(Oid parent, Datum key, Datum& lower, Datum& upper);

}  // namespace partheal::partitions
