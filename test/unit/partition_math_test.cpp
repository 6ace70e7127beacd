// Unit tests of the partition math: integers only, no PostgreSQL. Built and
// run by test/run.sh; prints one line per failed check and a summary.
#include <cstdint>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "ahead/headroom.hpp"
#include "heal/partition_math.hpp"

using namespace partheal::heal;

namespace {

int passed = 0;
int failed = 0;

template <typename A, typename B>
void expect_eq(const A& actual, const B& expected, const std::string& what) {
  if (actual == expected) {
    ++passed;
  } else {
    ++failed;
    std::cout << "not ok - " << what << ": got " << actual << ", expected " << expected << "\n";
  }
}

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
  expect_eq(covered(hand, 13), true, "13 is covered");
  expect_eq(covered(hand, 15), false, "upper bounds are exclusive");
  expect_eq(covered(around, kMin), true, "MINVALUE covers int64 min");
  expect_eq(covered(around, kMax), true, "MAXVALUE covers int64 max");

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

  // Headroom follows the recent peak rate, within [1, cap].
  using namespace partheal::ahead;
  Traffic quiet;
  observe(quiet, 5, 0);
  observe(quiet, 6, 1000);
  expect_eq(headroom(quiet, 1000, 10, 16), 1, "a quiet table keeps one partition ahead");
  Traffic busy;
  observe(busy, 0, 0);
  observe(busy, 5000, 1000);  // 5,000 ids/s
  expect_eq(headroom(busy, 1000, 10, 16), 16, "50,000 ids in 10 s at size 1000, capped at 16");
  expect_eq(headroom(busy, 10000, 10, 16), 5, "50,000 ids in 10 s at size 10,000");
  observe(busy, 5000, 31000);  // idle for a half-life
  expect_eq(headroom(busy, 10000, 10, 16), 3, "the peak halves after 30 s idle");
  observe(busy, 5000, 331000);
  expect_eq(headroom(busy, 10000, 10, 16), 1, "and fades back to one");
  Traffic back;
  observe(back, 1000, 0);
  observe(back, 10, 1000);
  expect_eq(headroom(back, 10, 10, 16), 1, "a position moved back is no traffic");
  expect_eq(headroom(busy, 1000, 10, 0), 1, "a cap below one still keeps one");
  Span s = needed(15, 10, 80, 1);
  expect_eq(s.first, 1, "position 15 is in partition 1");
  expect_eq(s.last, 1, "before the mark a quiet table needs only its own partition");
  s = needed(18, 10, 80, 1);
  expect_eq(s.last, 2, "at the mark, the next one");
  s = needed(11, 10, 80, 4);
  expect_eq(s.last, 4, "headroom 4 before the mark: three ahead");
  s = needed(-5, 10, 80, 2);
  expect_eq(s.first, -1, "negative positions too");

  std::cout << "partition_math: " << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}
