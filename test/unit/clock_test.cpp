// Unit tests of create-ahead by the clock (src/ahead/clock.cpp): which
// windows must exist at a given now, and when that next changes.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ahead/clock.hpp"
#include "expect.hpp"
#include "zones.hpp"

using namespace partheal::ahead;
using namespace partheal::partitions;
using unit::at;
using unit::days_of;
using unit::expect_eq;
using unit::kUsPerHour;
using unit::kUsPerMin;
using unit::kUsPerSec;

namespace {

// The plan's keys after now's own (the first) as "first,last first,last
// ...": both ends of each window.
std::string keys_of(const ClockPlan& p) {
  std::string out;
  for (size_t i = 1; i < p.keys.size(); ++i) {
    out += std::to_string(p.keys[i]);
    out += i % 2 == 1 ? "," : " ";
  }
  if (!out.empty()) out.pop_back();
  return out;
}

// The same for windows [from, to) of keys.
std::string windows(std::vector<std::pair<int64_t, int64_t>> w) {
  std::string out;
  for (const auto& [from, to] : w) out += std::to_string(from) + "," + std::to_string(to - 1) + " ";
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace

int main() {
  unit::FixedZone utc(0), kolkata(5 * kUsPerHour + 30 * kUsPerMin);
  const KeySpace day = unit::tstz(Cut::kDays, 1, utc);
  const int64_t now = at(2026, 12, 1, 10, 7);
  const int64_t today = days_of(2026, 12, 1);

  // premake 4: now's day and the four after it; the next change at the
  // next midnight (the docs' example).
  ClockPlan p = plan_by_clock(day, 4, 80, now);
  expect_eq(p.current, today, "premake 4: the current window is today's");
  expect_eq(p.last, today + 4, "premake 4: the last window is four days on");
  expect_eq(p.keys.size(), 11u, "premake 4: now's key, and both ends of five windows");
  expect_eq(p.keys.empty() ? 0 : p.keys[0], now,
            "now's own key first: partitions made by hand may cover both ends of its window");
  expect_eq(keys_of(p),
            windows({{at(2026, 12, 1), at(2026, 12, 2)},
                     {at(2026, 12, 2), at(2026, 12, 3)},
                     {at(2026, 12, 3), at(2026, 12, 4)},
                     {at(2026, 12, 4), at(2026, 12, 5)},
                     {at(2026, 12, 5), at(2026, 12, 6)}}),
            "premake 4: 1 to 5 December, each window's first and last key");
  expect_eq(p.wake_at, at(2026, 12, 2), "premake 4: wake at the next window's start");
  expect_eq(plan_by_clock(day, 4, 80, at(2026, 12, 2) - 1).last, today + 4,
            "premake 4: the last microsecond of today needs no more");
  expect_eq(plan_by_clock(day, 4, 80, at(2026, 12, 2)).last, today + 5,
            "premake 4: at midnight one window more");
  expect_eq(plan_by_clock(day, 4, 80, at(2026, 12, 2)).wake_at, at(2026, 12, 3),
            "premake 4: and the wake moves a day on");

  // premake 0: now's window, and the next once 80% of it has passed.
  p = plan_by_clock(day, 0, 80, now);
  expect_eq(p.last, today, "premake 0 before the mark: only today's window");
  expect_eq(keys_of(p), windows({{at(2026, 12, 1), at(2026, 12, 2)}}),
            "premake 0 before the mark: its keys");
  expect_eq(p.wake_at, at(2026, 12, 1, 19, 12),
            "premake 0 before the mark: wake at the mark (80% of 24 h)");
  p = plan_by_clock(day, 0, 80, at(2026, 12, 1, 19, 12) - 1);
  expect_eq(p.last, today, "premake 0: a microsecond before the mark");
  expect_eq(p.wake_at, at(2026, 12, 1, 19, 12), "premake 0: still waking at the mark");
  p = plan_by_clock(day, 0, 80, at(2026, 12, 1, 19, 12));
  expect_eq(p.last, today + 1, "premake 0 at the mark: tomorrow's window too");
  expect_eq(keys_of(p),
            windows({{at(2026, 12, 1), at(2026, 12, 2)}, {at(2026, 12, 2), at(2026, 12, 3)}}),
            "premake 0 at the mark: both windows' keys");
  expect_eq(p.wake_at, at(2026, 12, 2), "premake 0 past the mark: wake at the next window's start");
  expect_eq(plan_by_clock(day, 0, 50, at(2026, 12, 1, 12)).last, today + 1,
            "premake 0, mark 50%: at noon");
  expect_eq(plan_by_clock(day, 0, 50, now).wake_at, at(2026, 12, 1, 12),
            "premake 0, mark 50%: wake at noon");
  p = plan_by_clock(day, 0, 0, at(2026, 12, 1, 23));
  expect_eq(p.last, today, "mark 0: never the next window early");
  expect_eq(p.wake_at, at(2026, 12, 2), "mark 0: wake at the next window's start");
  expect_eq(plan_by_clock(day, -3, 80, now).last, today, "a negative premake counts as 0");
  expect_eq(plan_by_clock(day, 1, 80, at(2026, 12, 1, 23, 59)).last, today + 1,
            "premake 1: the mark of tomorrow is never reached today");
  expect_eq(plan_by_clock(day, 1, 80, at(2026, 12, 1, 23, 59)).wake_at, at(2026, 12, 2),
            "premake 1: wake at the next window's start, not at a mark");

  // The 23-hour day in Berlin: its mark is at 18.4 hours.
  const unit::RuleZone eu = unit::eu_zone(2026, 2026);
  const KeySpace berlin = unit::tstz(Cut::kDays, 1, eu);
  p = plan_by_clock(berlin, 0, 80, at(2026, 3, 29, 12));
  expect_eq(p.wake_at, at(2026, 3, 29, 17, 24), "Berlin, 29 March: the mark at 17:24 UTC");
  expect_eq(keys_of(p), windows({{at(2026, 3, 28, 23), at(2026, 3, 29, 22)}}),
            "Berlin, 29 March: the 23-hour window");
  p = plan_by_clock(berlin, 0, 80, at(2026, 3, 29, 17, 24));
  expect_eq(p.last, p.current + 1, "Berlin, 29 March: past the mark, the next day too");
  expect_eq(p.wake_at, at(2026, 3, 29, 22), "Berlin, 29 March: wake at local midnight, 22:00 UTC");
  p = plan_by_clock(berlin, 2, 80, at(2026, 10, 24, 23));
  expect_eq(keys_of(p),
            windows({{at(2026, 10, 24, 22), at(2026, 10, 25, 23)},
                     {at(2026, 10, 25, 23), at(2026, 10, 26, 23)},
                     {at(2026, 10, 26, 23), at(2026, 10, 27, 23)}}),
            "Berlin, 25 October with premake 2: the 25-hour day first");
  expect_eq(p.wake_at, at(2026, 10, 25, 23), "Berlin, 25 October: wake after 25 hours");

  // Months in Kolkata: at 23:00 UTC on 31 December it is already January.
  const KeySpace months = unit::tstz(Cut::kMonths, 1, kolkata);
  p = plan_by_clock(months, 1, 80, at(2026, 12, 31, 23));
  expect_eq(p.current, 27 * 12, "months in +05:30: January 2027's window");
  expect_eq(keys_of(p),
            windows({{at(2026, 12, 31, 18, 30), at(2027, 1, 31, 18, 30)},
                     {at(2027, 1, 31, 18, 30), at(2027, 2, 28, 18, 30)}}),
            "months in +05:30: January and February");
  expect_eq(p.wake_at, at(2027, 1, 31, 18, 30),
            "months in +05:30: wake at February's local midnight");

  // One second, premake 3: four windows; wake at the next second.
  const KeySpace sec = unit::tstz(Cut::kMicroseconds, kUsPerSec, utc);
  const int64_t s = at(2026, 12, 1, 10, 7, 3);
  p = plan_by_clock(sec, 3, 80, s + 500000);
  expect_eq(keys_of(p),
            windows({{s, s + kUsPerSec},
                     {s + kUsPerSec, s + 2 * kUsPerSec},
                     {s + 2 * kUsPerSec, s + 3 * kUsPerSec},
                     {s + 3 * kUsPerSec, s + 4 * kUsPerSec}}),
            "1 second, premake 3: four one-second windows");
  expect_eq(p.wake_at, s + kUsPerSec, "1 second: wake at the next second");
  p = plan_by_clock(sec, 0, 80, s + 500000);
  expect_eq(p.wake_at, s + 800000, "1 second, premake 0: wake at the mark, 0.8 s");
  expect_eq(plan_by_clock(sec, 0, 80, s + 800000).last, p.current + 1,
            "1 second, premake 0: at 0.8 s the next");

  // 15 minutes before 2000: negative window numbers.
  const KeySpace quarter_hours = unit::tstz(Cut::kMicroseconds, 15 * kUsPerMin, utc);
  p = plan_by_clock(quarter_hours, 1, 80, at(1999, 12, 31, 23, 50));
  expect_eq(p.current, -1, "15 minutes at 23:50 on 1999-12-31: window -1");
  expect_eq(keys_of(p),
            windows({{at(1999, 12, 31, 23, 45), at(2000, 1, 1)},
                     {at(2000, 1, 1), at(2000, 1, 1, 0, 15)}}),
            "15 minutes, premake 1, across 2000");

  // A date key: now's UTC date; wake at the next UTC midnight.
  const KeySpace dates = unit::date(Cut::kDays, 1);
  p = plan_by_clock(dates, 2, 80, now);
  expect_eq(keys_of(p),
            windows({{today, today + 1}, {today + 1, today + 2}, {today + 2, today + 3}}),
            "date key, premake 2: three days");
  expect_eq(p.wake_at, at(2026, 12, 2), "date key: wake at the next UTC midnight");
  // A day of dates has one key: its mark (80% of one day, rounded down) is
  // the day itself, so premake 0 makes tomorrow's at once.
  p = plan_by_clock(dates, 0, 80, at(2026, 12, 1));
  expect_eq(p.last, today + 1, "date key, premake 0: tomorrow at once");
  expect_eq(p.wake_at, at(2026, 12, 2), "date key, premake 0: wake at the next midnight");
  expect_eq(plan_by_clock(dates, 0, 80, at(2026, 12, 1) - 1).current, today - 1,
            "date key: the microsecond before midnight is yesterday's date");
  const KeySpace date_months = unit::date(Cut::kMonths, 1);
  p = plan_by_clock(date_months, 0, 80, at(2026, 12, 10));
  expect_eq(p.last, p.current, "date months, premake 0: before the mark");
  expect_eq(p.wake_at, at(2026, 12, 25), "date months: the mark is day 24 of 31 after the 1st");

  // A timestamp key: the clock's UTC wall clock.
  const KeySpace wall = unit::ts(Cut::kMicroseconds, kUsPerHour);
  p = plan_by_clock(wall, 1, 80, now);
  expect_eq(keys_of(p),
            windows({{at(2026, 12, 1, 10), at(2026, 12, 1, 11)},
                     {at(2026, 12, 1, 11), at(2026, 12, 1, 12)}}),
            "timestamp key, hourly, premake 1");
  expect_eq(p.wake_at, at(2026, 12, 1, 11), "timestamp key: wake at the next hour");

  // The first window of the type: its lower end is MINVALUE, and the plan
  // asks for the type's first key there.
  p = plan_by_clock(day, 0, 80, unit::kTimestampMin + kUsPerHour);
  expect_eq(p.keys.size(), 3u, "the type's first day: now's key and one window");
  expect_eq(p.keys.size() < 2 ? 0 : p.keys[1], unit::kTimestampMin,
            "the type's first day: from the first key");
  return unit::summary("clock");
}
