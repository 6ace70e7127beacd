// Unit tests of create-ahead's math (src/ahead/headroom.cpp): the
// headroom, the mark for every increment, the ids the worker keeps covered.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ahead/headroom.hpp"
#include "expect.hpp"

using namespace partheal::ahead;
using unit::expect_eq;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

}  // namespace

int main() {
  // Headroom follows the recent peak rate, within [1, cap].
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

  return unit::summary("headroom");
}
