// Unit tests of the partition math: integers only, no PostgreSQL. Built and
// run by test/run.sh; prints one line per failed check and a summary.
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
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

  // The mark, for every increment. Increment 1: id 8 of [0, 10) asks for
  // partition 1, once.
  auto target = [](int64_t id, int64_t inc, int64_t size, int percent) {
    std::optional<int64_t> t = mark_target(id, inc, size, percent);
    return t ? *t : -999;
  };
  expect_eq(target(7, 1, 10, 80), -999, "id 7 is below the mark");
  expect_eq(target(8, 1, 10, 80), 1, "id 8 is the mark: partition 1");
  expect_eq(target(9, 1, 10, 80), -999, "id 9 asked already at 8");
  // Increment 3: 6 is below the mark 8, 9 is the first past it.
  expect_eq(target(6, 3, 10, 80), -999, "increment 3: 6 is below the mark");
  expect_eq(target(9, 3, 10, 80), 1, "increment 3: 9 passes it");
  // Increment 60 at size 100 (mark 80): 60 is the last draw partition 0
  // gets, so it asks, though no draw lands at the mark.
  expect_eq(target(0, 60, 100, 80), -999, "increment 60: 0 is not the last of its partition");
  expect_eq(target(60, 60, 100, 80), 1, "increment 60: 60 is, and asks for partition 1");
  expect_eq(target(120, 60, 100, 80), -999, "increment 60: 120 is neither");
  expect_eq(target(180, 60, 100, 80), 2, "increment 60: 180 reaches the mark of partition 1");
  expect_eq(target(240, 60, 100, 80), 3, "increment 60: 240 asks for 300's partition");
  // Increment 1000 at size 100: every draw asks for the next draw's partition.
  expect_eq(target(1, 1000, 100, 80), 10, "increment 1000: id 1 asks for 1001's partition 10");
  expect_eq(target(1001, 1000, 100, 80), 20, "id 1001 for 2001's partition 20");
  expect_eq(target(kMax - 5, 1000, 100, 80), -999, "no draw after the last one");

  // The ids the worker keeps partitions for.
  auto show_ids = [](const std::vector<int64_t>& v) {
    std::string out;
    for (int64_t id : v) out += (out.empty() ? "" : ",") + std::to_string(id);
    return out;
  };
  expect_eq(show_ids(needed_ids(Draws{15, true, 1, 1}, 10, 80, 1, kMax)), "10,19",
            "increment 1, quiet, before the mark: the position's own partition");
  expect_eq(show_ids(needed_ids(Draws{18, true, 1, 1}, 10, 80, 1, kMax)), "10,19,20,29",
            "at the mark, the next one too");
  expect_eq(show_ids(needed_ids(Draws{1, false, 1, 1}, 10, 80, 1, kMax)), "0,9",
            "a sequence not drawn from: the partition of its first id");
  expect_eq(show_ids(needed_ids(Draws{5000, false, 1, 1}, 100, 80, 1, kMax)), "5000,5099",
            "restarted at 5000: 5000's partition, not 4999's");
  expect_eq(show_ids(needed_ids(Draws{25, true, 1, 10}, 10, 80, 1, kMax)), "10,19,20,29",
            "CACHE 10: the partition of the ids sessions may hold below the position too");
  expect_eq(show_ids(needed_ids(Draws{1001, true, 1000, 1}, 100, 80, 2, kMax)), "1001,2001,3001",
            "increment 1000 at size 100: the position's id and the next two draws");
  expect_eq(show_ids(needed_ids(Draws{1, false, 1000, 1}, 100, 80, 1, kMax)), "1,1001",
            "increment 1000, not drawn from: the first draw and the next");
  expect_eq(show_ids(needed_ids(Draws{kMax - 500, true, 1000, 1}, 100, 80, 3, kMax)),
            std::to_string(kMax - 500), "no draw past the key type");
  expect_eq(watermark_ceiling(Draws{15, true, 1, 1}, 10, 80), 1,
            "ceiling before the mark: the position's own partition");
  expect_eq(watermark_ceiling(Draws{18, true, 1, 1}, 10, 80), 2, "ceiling at the mark: the next");
  expect_eq(watermark_ceiling(Draws{1, false, 1, 1}, 10, 80), 0,
            "ceiling after RESTART: partition 0");
  expect_eq(watermark_ceiling(Draws{1001, true, 1000, 1}, 100, 80), 20,
            "ceiling with increment 1000: the next draw's partition");
  expect_eq(mark_threshold(0, 100, 80, 1), 80, "threshold, increment 1: the mark");
  expect_eq(mark_threshold(0, 100, 80, 60), 40, "increment 60: the last draw from 40 on");
  expect_eq(mark_threshold(1, 100, 80, 100), 100, "increment = size: every draw");
  expect_eq(show_ids(needed_ids(Draws{60, true, 60, 1}, 100, 80, 1, kMax)), "0,99,100,199",
            "increment 60: 60 is partition 0's last draw, so the next partition is kept");
  expect_eq(show_ids(needed_ids(Draws{101, true, 100, 1}, 100, 80, 1, kMax)), "100,199,200,299",
            "increment = size: each draw keeps the next partition");
  expect_eq(watermark_ceiling(Draws{60, true, 60, 1}, 100, 80), 1,
            "ceiling, increment 60 at 60: the next partition");
  expect_eq(partition_step(1000, 100), 1000, "increment 1000: one partition per draw");
  expect_eq(partition_step(1, 100), 100, "increment 1: one partition per 100 ids");

  std::cout << "partition_math: " << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}
