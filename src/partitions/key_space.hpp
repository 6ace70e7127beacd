// The key space: which partition a key belongs to, and the range partheal
// creates for it. Integers only, no PostgreSQL, no SQL. Integer ids are
// cut into aligned ranges of `size` ids; every caller (the heal loop,
// create-ahead, partheal_reserve) asks through KeySpace, so another kind of
// key (time windows) is another KeySpace, not another caller.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partheal::partitions {

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

// A key type's values cut into partitions of `size` keys, within the
// type's own limits.
struct KeySpace {
  int64_t size = 0;
  int64_t min = 0;
  int64_t max = 0;

  int64_t number_of(int64_t key) const { return partition_number(key, size); }
  // The first key of partition n; false past the type's maximum.
  bool first_key_of(int64_t n, int64_t* key) const { return first_id_of(n, size, max, key); }
  // The range partheal creates for an uncovered key (covering_range).
  Range covering(int64_t key, const std::vector<Range>& existing) const {
    return covering_range(key, size, existing, min, max);
  }
};

// "_p<lower>", the part of a partition's name that must survive clipping.
// A negative lower bound reads "_pm5", since '-' would force quoting.
std::string partition_suffix(const Bound& lower);

// The same part for a window's lower bound given as the text of a value
// (partheal_attach_window: any key type): "_p20260101" for a date or a time
// at midnight, "_p20260101_063000" for another time, "_p1000" or "_pm5" for
// a number, and the letters and digits of the text for any other type.
std::string value_suffix(bool is_time, const std::string& text);

// The SQL text of a bound inside FOR VALUES FROM (...) TO (...).
std::string bound_sql(const Bound& b);

}  // namespace partheal::partitions
