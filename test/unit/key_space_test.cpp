// Unit tests of the key space (src/partitions/key_space.cpp): which
// partition a key is in, the range created for it, marks, names.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "expect.hpp"
#include "partitions/key_space.hpp"

using namespace partheal::partitions;
using unit::expect_eq;

namespace {

std::string show(const Range& r) {
  return bound_sql(r.lower) + ".." + bound_sql(r.upper);
}

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

}  // namespace

int main() {
  // Floor division, below zero too.
  expect_eq(partition_number(25, 10), 2, "25 / 10");
  expect_eq(partition_number(20, 10), 2, "a lower bound belongs to its partition");
  expect_eq(partition_number(-1, 10), -1, "-1 is in partition -1");
  expect_eq(partition_number(-10, 10), -1, "-10 is in partition -1");
  expect_eq(partition_number(-11, 10), -2, "-11 is in partition -2");
  expect_eq(partition_number(kMax, 1), kMax, "int64 max, size 1");
  expect_eq(partition_number(kMin, 10), kMin / 10 - 1, "int64 min rounds down");

  // The aligned range, and the key type's limits.
  const int64_t i16min = std::numeric_limits<int16_t>::min(),
                i16max = std::numeric_limits<int16_t>::max();
  expect_eq(show(covering_range(25, 10, {}, kMin, kMax)), "20..30", "aligned");
  expect_eq(show(covering_range(-7, 10, {}, kMin, kMax)), "-10..0", "aligned below zero");
  expect_eq(show(covering_range(32767, 1000, {}, i16min, i16max)), "32000..MAXVALUE",
            "smallint: past its maximum is MAXVALUE");
  expect_eq(show(covering_range(-32768, 1000, {}, i16min, i16max)), "MINVALUE..-32000",
            "smallint: below its minimum is MINVALUE");
  expect_eq(show(covering_range(kMax, 10, {}, kMin, kMax)), "9223372036854775800..MAXVALUE",
            "bigint: no overflow at the top");
  expect_eq(show(covering_range(kMin, 10, {}, kMin, kMax)), "MINVALUE..-9223372036854775800",
            "bigint: no overflow at the bottom");

  // Never overlap someone else's partition: cover only the free gap.
  std::vector<Range> hand = {Range{Bound::at(13), Bound::at(15)}};
  expect_eq(show(covering_range(11, 10, hand, kMin, kMax)), "10..13", "gap below a partition");
  expect_eq(show(covering_range(17, 10, hand, kMin, kMax)), "15..20", "gap above a partition");
  std::vector<Range> around = {Range{Bound::min(), Bound::at(21)},
                               Range{Bound::at(24), Bound::max()}};
  expect_eq(show(covering_range(22, 10, around, kMin, kMax)), "21..24",
            "a gap inside one aligned range");
  expect_eq(show(covering_range(12, 10, hand, kMin, kMax)), "10..13",
            "13 is covered: the gap below ends there");
  expect_eq(show(covering_range(15, 10, hand, kMin, kMax)), "15..20",
            "upper bounds are exclusive: 15 is free");
  std::vector<Range> low = {Range{Bound::min(), Bound::at(0)}};
  std::vector<Range> high = {Range{Bound::at(0), Bound::max()}};
  expect_eq(show(covering_range(0, 10, low, kMin, kMax)), "0..10",
            "MINVALUE is below every value: a partition from it ends at its upper bound");
  expect_eq(show(covering_range(-1, 10, high, kMin, kMax)), "-10..0",
            "MAXVALUE is above every value: a partition to it starts at its lower bound");

  // The create-ahead mark.
  expect_eq(mark_of(0, 10, 80), 8, "partition 0's mark");
  expect_eq(mark_of(2, 10, 80), 28, "partition 2's mark");
  expect_eq(mark_of(0, 10000, 80), 8000, "size 10,000");
  expect_eq(mark_of(-1, 10, 50), -5, "a partition below zero");
  expect_eq(mark_of(0, 1, 80), 0, "size 1: the mark is the partition's only id");
  expect_eq(mark_of(kMax / 10, 10, 99), kMax, "a mark past int64 max is clamped");
  int64_t first = 0;
  expect_eq(first_id_of(3, 10, kMax, &first), true, "partition 3 has a first id");
  expect_eq(first, 30, "partition 3 starts at 30");
  expect_eq(first_id_of(33, 1000, i16max, &first), false, "no partition past smallint's maximum");
  expect_eq(first_id_of(kMax / 10 + 1, 10, kMax, &first), false, "no partition past int64 max");

  // Names keep a suffix that needs no quoting.
  expect_eq(partition_suffix(Bound::at(20)), "_p20", "positive");
  expect_eq(partition_suffix(Bound::at(-10)), "_pm10", "negative");
  expect_eq(partition_suffix(Bound::at(kMin)), "_pm9223372036854775808", "int64 min");
  expect_eq(partition_suffix(Bound::min()), "_pmin", "MINVALUE");

  // A window's lower bound as text (partheal_attach_window, any key type).
  expect_eq(value_suffix(true, "2026-01-01"), "_p20260101", "a date");
  expect_eq(value_suffix(true, "2026-01-01 00:00:00+00"), "_p20260101", "a time at midnight");
  expect_eq(value_suffix(true, "2026-01-01 06:30:00+00"), "_p20260101_063000", "a time of day");
  expect_eq(value_suffix(false, "-5"), "_pm5", "a negative number");
  expect_eq(value_suffix(false, "Ab c"), "_pab_c", "other text: letters and digits, lower case");

  // The key space asks the same math.
  KeySpace ids = KeySpace::ids(10, kMin, kMax);
  expect_eq(ids.number_of(25), 2, "KeySpace: 25 is in partition 2");
  int64_t first_key = 0;
  expect_eq(ids.first_key_of(3, &first_key), true, "KeySpace: partition 3 has a first key");
  expect_eq(first_key, 30, "KeySpace: partition 3 starts at 30");
  expect_eq(show(ids.covering(17, hand)), "15..20", "KeySpace: covering clips to the gap");
  return unit::summary("key_space");
}
