// Where an id belongs, in integers only: no PostgreSQL, no SQL.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partheal::heal {

// One end of a range partition. Unbounded ends are PostgreSQL's MINVALUE and
// MAXVALUE; a bound past the key type's range must be written as one of them.
struct Bound {
  enum class Kind { kMinValue, kValue, kMaxValue };
  Kind kind = Kind::kValue;
  int64_t value = 0;

  static Bound min() { return {Kind::kMinValue, 0}; }
  static Bound max() { return {Kind::kMaxValue, 0}; }
  static Bound at(int64_t v) { return {Kind::kValue, v}; }
};

// [lower, upper), as FOR VALUES FROM (lower) TO (upper).
struct Range {
  Bound lower;
  Bound upper;
};

// The partition number n with n*size <= id < (n+1)*size; ids below zero too.
int64_t partition_number(int64_t id, int64_t size);

bool contains(const Range& r, int64_t id);
bool covered(const std::vector<Range>& existing, int64_t id);

// The create-ahead mark of partition n: n*size + size*percent/100, the id
// whose appearance asks for partition n+1.
int64_t mark_of(int64_t n, int64_t size, int percent);

// The first id of partition n, or nothing past the key type's maximum.
bool first_id_of(int64_t n, int64_t size, int64_t type_max, int64_t* id);

// The range partheal creates for an uncovered id: the aligned partition
// [n*size, (n+1)*size), cut to the free gap around the id so that it never
// overlaps a partition somebody else made, and to the key type's limits.
Range covering_range(int64_t id, int64_t size, const std::vector<Range>& existing, int64_t type_min,
                     int64_t type_max);

// "_p<lower>", the part of a partition's name that must survive clipping.
// A negative lower bound reads "_pm5", since '-' would force quoting.
std::string partition_suffix(const Bound& lower);

// The SQL text of a bound inside FOR VALUES FROM (...) TO (...).
std::string bound_sql(const Bound& b);

}  // namespace partheal::heal
