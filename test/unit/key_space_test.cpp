// Unit tests of the key space (src/partitions/key_space.cpp): which
// partition a key is in, the range created for it, marks, names; for ids,
// and for time keys cut by the calendar in fake zones (zones.hpp).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "expect.hpp"
#include "partitions/key_space.hpp"
#include "zones.hpp"

using namespace partheal::partitions;
using unit::expect_eq;

void time_cuts();

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
  // A sequence that starts at bigint's minimum: its partition reaches below
  // it, and starts there.
  expect_eq(first_id_of(partition_number(kMin, 100), 100, kMax, &first), true,
            "the partition of int64 min has a first id");
  expect_eq(first, kMin, "which is int64 min");
  expect_eq(first_id_of(partition_number(kMin, 100) - 1, 100, kMax, &first), false,
            "no partition below it");

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

  time_cuts();
  return unit::summary("key_space");
}

// ---------------------------------------------------------------------------
// Time keys. Keys are microseconds since 2000-01-01 (timestamptz,
// timestamp) or days (date); the expected bounds are written out as
// PostgreSQL would print them, computed by the plain calendar of zones.hpp.

namespace {

using unit::at;
using unit::days_of;
using unit::kUsPerDay;
using unit::kUsPerHour;
using unit::kUsPerMin;
using unit::kUsPerSec;

// "'lower'..'upper'" as the DDL gets it.
std::string sql(const KeySpace& ks, const Range& r) {
  return ks.bound_sql(r.lower) + ".." + ks.bound_sql(r.upper);
}

// The window holding key.
std::string win(const KeySpace& ks, int64_t key) {
  return sql(ks, ks.window(ks.number_of(key)));
}

int64_t length(const KeySpace& ks, int64_t n) {
  Range r = ks.window(n);
  return r.upper.value - r.lower.value;
}

std::string name(const KeySpace& ks, int64_t key) {
  return ks.suffix(ks.window(ks.number_of(key)).lower);
}

void civil_calendar() {
  // The calendar underneath, against the slow one, BC and the far future too.
  expect_eq(days_from_civil(2000, 1, 1), 0, "2000-01-01 is day 0");
  expect_eq(days_from_civil(1970, 1, 1), -10957, "1970-01-01");
  expect_eq(days_from_civil(2000, 3, 1), 60, "2000 is a leap year");
  expect_eq(days_from_civil(-4713, 11, 24), unit::kDateMin, "4714-11-24 BC: the first date");
  expect_eq(days_from_civil(294277, 1, 1), (unit::kTimestampMax + 1) / kUsPerDay,
            "294277-01-01: the end of timestamps");
  expect_eq(days_from_civil(5874898, 1, 1), unit::kDateMax + 1, "5874898-01-01: the end of dates");
  int bad = 0;
  std::string first_bad;
  for (int64_t y = -500; y <= 2500; y += 7) {
    for (int m = 1; m <= 12; ++m) {
      for (int d : {1, unit::month_days(y, m)}) {
        int64_t days = days_from_civil(y, m, d);
        int64_t yy = 0;
        int mm = 0, dd = 0;
        civil_from_days(days, &yy, &mm, &dd);
        if (days != days_of(y, m, d) || yy != y || mm != m || dd != d) {
          if (bad++ == 0)
            first_bad = std::to_string(y) + "-" + std::to_string(m) + "-" + std::to_string(d);
        }
      }
    }
  }
  expect_eq(bad, 0,
            "days_from_civil and civil_from_days agree with the plain calendar, years -500 to 2500 "
            "(first: " +
                first_bad + ")");
}

void interval_cuts() {
  auto cut = [](int32_t months, int32_t days, int64_t us, bool date_key = false) {
    IntervalCut c = cut_of_interval(months, days, us, date_key);
    if (!c.ok) return "refused: " + c.why;
    const char* kind = c.cut == Cut::kDays           ? "days"
                       : c.cut == Cut::kMonths       ? "months"
                       : c.cut == Cut::kMicroseconds ? "us"
                                                     : "ids";
    return std::string(kind) + " " + std::to_string(c.step);
  };
  expect_eq(cut(0, 1, 0), "days 1", "'1 day'");
  expect_eq(cut(0, 7, 0), "days 7", "'1 week'");
  expect_eq(cut(1, 0, 0), "months 1", "'1 month'");
  expect_eq(cut(2, 0, 0), "months 2", "'2 months'");
  expect_eq(cut(3, 0, 0), "months 3", "'3 months'");
  expect_eq(cut(4, 0, 0), "months 4", "'4 months'");
  expect_eq(cut(6, 0, 0), "months 6", "'6 months'");
  expect_eq(cut(12, 0, 0), "months 12", "'1 year'");
  expect_eq(cut(0, 0, kUsPerSec), "us 1000000", "'1 second'");
  expect_eq(cut(0, 0, 2 * kUsPerSec), "us 2000000", "'2 seconds'");
  expect_eq(cut(0, 0, 15 * kUsPerMin), "us 900000000", "'15 minutes'");
  expect_eq(cut(0, 0, 90 * kUsPerMin), "us 5400000000", "'90 minutes'");
  expect_eq(cut(0, 0, kUsPerHour), "us 3600000000", "'1 hour'");
  expect_eq(cut(0, 0, 12 * kUsPerHour), "us 43200000000", "'12 hours'");
  expect_eq(cut(0, 1, 0, true), "days 1", "'1 day' on a date key");
  expect_eq(cut(3, 0, 0, true), "months 3", "'3 months' on a date key");

  const std::string mixes = "refused: it mixes months, days and times of day";
  const std::string not_positive = "refused: it is not greater than zero";
  const std::string not_dividing = "refused: it does not divide a day into whole seconds";
  const std::string in_days = "refused: a window of a day or longer is given in days";
  expect_eq(cut(1, 2, 0), mixes, "'1 month 2 days'");
  expect_eq(cut(0, 1, 2 * kUsPerHour), mixes, "'1 day 2 hours'");
  expect_eq(cut(1, 0, kUsPerSec), mixes, "'1 month 1 second'");
  expect_eq(cut(0, 0, 0), not_positive, "'0 days'");
  expect_eq(cut(0, -1, 0), not_positive, "'-1 day'");
  expect_eq(cut(-1, 0, 0), not_positive, "'-1 month'");
  expect_eq(cut(0, 0, -kUsPerHour), not_positive, "'-1 hour'");
  expect_eq(cut(1, -1, 0), not_positive, "'1 month -1 day'");
  expect_eq(cut(0, 0, 7 * kUsPerHour), not_dividing, "'7 hours'");
  expect_eq(cut(0, 0, 7 * kUsPerSec), not_dividing, "'7 seconds'");
  expect_eq(cut(0, 0, kUsPerSec / 2), not_dividing, "'0.5 seconds'");
  expect_eq(cut(0, 0, 3 * kUsPerSec / 2), not_dividing, "'1.5 seconds'");
  expect_eq(cut(0, 0, 1), not_dividing, "'1 microsecond'");
  expect_eq(cut(0, 0, 24 * kUsPerHour), in_days, "'24 hours'");
  expect_eq(cut(0, 0, 25 * kUsPerHour), in_days, "'25 hours'");
  expect_eq(cut(0, 0, 48 * kUsPerHour), in_days, "'48 hours'");
  expect_eq(cut(5, 0, 0), "refused: its months do not divide a year", "'5 months'");
  expect_eq(cut(24, 0, 0), "refused: its months do not divide a year", "'2 years'");
  expect_eq(cut(0, 3, 0), "refused: only 1 day and 1 week are calendar windows of days",
            "'3 days'");
  expect_eq(cut(0, 14, 0), "refused: only 1 day and 1 week are calendar windows of days",
            "'2 weeks'");
  expect_eq(cut(0, 0, kUsPerHour, true), "refused: a date key has no time of day",
            "'1 hour' on a date key");
}

void days_and_weeks() {
  unit::FixedZone utc(0), kolkata(5 * kUsPerHour + 30 * kUsPerMin), west(-8 * kUsPerHour),
      cet(kUsPerHour);
  const KeySpace day = unit::tstz(Cut::kDays, 1, utc);
  const int64_t key = at(2026, 12, 1, 10, 7);
  expect_eq(day.number_of(at(2000, 1, 1)), 0, "day: 2000-01-01 is window 0");
  expect_eq(day.number_of(key), days_of(2026, 12, 1), "day: window n is day n");
  expect_eq(win(day, key), "'2026-12-01 00:00:00+00'..'2026-12-02 00:00:00+00'", "day in UTC");
  expect_eq(name(day, key), "_p20261201", "day in UTC: its name");
  expect_eq(day.key_text(key), "2026-12-01 10:07:00+00", "timestamptz key text");
  expect_eq(day.number_of(at(2026, 12, 2) - 1), days_of(2026, 12, 1), "day: the last microsecond");
  expect_eq(day.number_of(at(2026, 12, 2)), days_of(2026, 12, 2),
            "day: the next midnight is the next window");

  const KeySpace in_kolkata = unit::tstz(Cut::kDays, 1, kolkata);
  expect_eq(win(in_kolkata, key), "'2026-11-30 18:30:00+00'..'2026-12-01 18:30:00+00'",
            "day in +05:30: from local midnight");
  expect_eq(name(in_kolkata, key), "_p20261201", "day in +05:30: named after the local date");
  expect_eq(in_kolkata.number_of(at(2026, 12, 1, 19, 0)), days_of(2026, 12, 2),
            "day in +05:30: 19:00 UTC is the next local day");
  expect_eq(name(in_kolkata, at(2026, 12, 1, 19, 0)), "_p20261202", "day in +05:30: its name");
  const KeySpace in_west = unit::tstz(Cut::kDays, 1, west);
  expect_eq(win(in_west, at(2026, 12, 2, 3, 0)),
            "'2026-12-01 08:00:00+00'..'2026-12-02 08:00:00+00'",
            "day in -08:00: 03:00 UTC is still the day before");
  expect_eq(name(in_west, at(2026, 12, 2, 3, 0)), "_p20261201", "day in -08:00: its name");

  const KeySpace wall = unit::ts(Cut::kDays, 1);
  expect_eq(win(wall, key), "'2026-12-01 00:00:00'..'2026-12-02 00:00:00'",
            "day, timestamp key: no offset");
  expect_eq(wall.key_text(key + 1), "2026-12-01 10:07:00.000001",
            "timestamp key text, microseconds");
  const KeySpace dates = unit::date(Cut::kDays, 1);
  expect_eq(win(dates, days_of(2026, 12, 1)), "'2026-12-01'..'2026-12-02'", "day, date key");
  expect_eq(name(dates, days_of(2026, 12, 1)), "_p20261201", "day, date key: its name");
  expect_eq(dates.key_text(days_of(2026, 12, 1)), "2026-12-01", "date key text");

  // Weeks start on Monday, from Monday 2000-01-03.
  const KeySpace week = unit::tstz(Cut::kDays, 7, utc);
  expect_eq(week.number_of(at(2000, 1, 3)), 0, "week: 2000-01-03, a Monday, starts window 0");
  expect_eq(week.number_of(at(2000, 1, 3) - 1), -1, "week: Sunday 2000-01-02 is in window -1");
  expect_eq(sql(week, week.window(-1)), "'1999-12-27 00:00:00+00'..'2000-01-03 00:00:00+00'",
            "week -1: from Monday 1999-12-27");
  expect_eq(week.number_of(key), (days_of(2026, 11, 30) - 2) / 7,
            "week: window number of a Tuesday");
  expect_eq(win(week, key), "'2026-11-30 00:00:00+00'..'2026-12-07 00:00:00+00'",
            "week of Tuesday 2026-12-01: from Monday 2026-11-30");
  expect_eq(name(week, key), "_p20261130", "week: named after its Monday");
  expect_eq(win(week, at(2026, 12, 7) - 1), "'2026-11-30 00:00:00+00'..'2026-12-07 00:00:00+00'",
            "week: Sunday's last microsecond");
  expect_eq(win(unit::tstz(Cut::kDays, 7, cet), key),
            "'2026-11-29 23:00:00+00'..'2026-12-06 23:00:00+00'",
            "week in +01:00: local Monday midnight");
  const KeySpace date_weeks = unit::date(Cut::kDays, 7);
  expect_eq(date_weeks.number_of(days_of(2000, 1, 2)), -1,
            "week, date key: 2000-01-02 is in window -1");
  expect_eq(sql(date_weeks, date_weeks.window(-1)), "'1999-12-27'..'2000-01-03'",
            "week -1, date key");
  expect_eq(win(date_weeks, days_of(2026, 12, 6)), "'2026-11-30'..'2026-12-07'",
            "week, date key: Sunday");
}

void months() {
  unit::FixedZone utc(0), kolkata(5 * kUsPerHour + 30 * kUsPerMin), cet(kUsPerHour);
  const KeySpace month = unit::tstz(Cut::kMonths, 1, kolkata);
  const int64_t key = at(2026, 11, 15);
  expect_eq(month.number_of(key), 26 * 12 + 10, "month: 2026-11 is window 322");
  expect_eq(win(month, key), "'2026-10-31 18:30:00+00'..'2026-11-30 18:30:00+00'",
            "month in +05:30");
  expect_eq(name(month, key), "_p20261101", "month in +05:30: its name");
  expect_eq(win(month, at(2026, 12, 31, 20, 0)),
            "'2026-12-31 18:30:00+00'..'2027-01-31 18:30:00+00'",
            "month in +05:30: 20:00 UTC on 31 December is January");
  const KeySpace utc_month = unit::tstz(Cut::kMonths, 1, utc);
  expect_eq(win(utc_month, at(2024, 2, 29, 12)),
            "'2024-02-01 00:00:00+00'..'2024-03-01 00:00:00+00'", "month: February of a leap year");
  expect_eq(utc_month.mark_of(utc_month.number_of(at(2024, 2, 10)), 50), at(2024, 2, 15, 12),
            "month: the mark at 50% of 29 days");
  expect_eq(win(utc_month, at(2100, 2, 28, 23)),
            "'2100-02-01 00:00:00+00'..'2100-03-01 00:00:00+00'", "month: 2100 is no leap year");
  expect_eq(utc_month.number_of(at(2000, 1, 1) - 1), -1, "month: December 1999 is window -1");
  expect_eq(sql(utc_month, utc_month.window(-13)),
            "'1998-12-01 00:00:00+00'..'1999-01-01 00:00:00+00'", "month -13: December 1998");

  const KeySpace quarter = unit::date(Cut::kMonths, 3);
  expect_eq(quarter.number_of(days_of(2026, 12, 1)), (26 * 12 + 11) / 3, "quarter: window number");
  expect_eq(win(quarter, days_of(2026, 12, 1)), "'2026-10-01'..'2027-01-01'", "quarter, date key");
  expect_eq(name(quarter, days_of(2026, 12, 1)), "_p20261001", "quarter: its name");
  expect_eq(win(quarter, days_of(1999, 9, 30)), "'1999-07-01'..'1999-10-01'",
            "quarter before 2000");
  expect_eq(quarter.number_of(days_of(1999, 10, 1)), -1, "quarter: Q4 1999 is window -1");
  expect_eq(quarter.mark_of(quarter.number_of(days_of(2026, 12, 1)), 80), days_of(2026, 10, 1) + 73,
            "quarter, date key: the mark at 80% of 92 days");
  expect_eq(win(unit::ts(Cut::kMonths, 3), at(2026, 1, 1)),
            "'2026-01-01 00:00:00'..'2026-04-01 00:00:00'",
            "quarter, timestamp key: its first microsecond");
  expect_eq(win(unit::ts(Cut::kMonths, 3), at(2026, 4, 1) - 1),
            "'2026-01-01 00:00:00'..'2026-04-01 00:00:00'",
            "quarter, timestamp key: its last microsecond");

  const KeySpace year = unit::tstz(Cut::kMonths, 12, utc);
  expect_eq(year.number_of(at(2026, 7, 4)), 26, "year: 2026 is window 26");
  expect_eq(win(year, at(2026, 7, 4)), "'2026-01-01 00:00:00+00'..'2027-01-01 00:00:00+00'",
            "year");
  expect_eq(name(year, at(2026, 7, 4)), "_p20260101", "year: its name");
  expect_eq(win(year, at(2000, 1, 1) - 1), "'1999-01-01 00:00:00+00'..'2000-01-01 00:00:00+00'",
            "year: 1999's last microsecond");
  const KeySpace year_cet = unit::tstz(Cut::kMonths, 12, cet);
  expect_eq(year_cet.number_of(at(1999, 12, 31, 23, 30)), 0,
            "year in +01:00: 23:30 UTC on 1999-12-31 is 2000");
  expect_eq(win(year_cet, at(1999, 12, 31, 23, 30)),
            "'1999-12-31 23:00:00+00'..'2000-12-31 23:00:00+00'", "year in +01:00");
  expect_eq(win(unit::tstz(Cut::kMonths, 6, utc), at(2026, 7, 1)),
            "'2026-07-01 00:00:00+00'..'2027-01-01 00:00:00+00'", "half year");
  expect_eq(win(unit::tstz(Cut::kMonths, 4, utc), at(2026, 4, 30)),
            "'2026-01-01 00:00:00+00'..'2026-05-01 00:00:00+00'", "four months");
  expect_eq(win(unit::tstz(Cut::kMonths, 2, utc), at(2026, 12, 31)),
            "'2026-11-01 00:00:00+00'..'2027-01-01 00:00:00+00'", "two months");
}

void fixed_lengths() {
  unit::FixedZone utc(0), kolkata(5 * kUsPerHour + 30 * kUsPerMin);
  const int64_t key = at(2026, 12, 1, 10, 7);
  const KeySpace q = unit::tstz(Cut::kMicroseconds, 15 * kUsPerMin, utc);
  expect_eq(q.number_of(key), 943816, "15 minutes: window number since 2000");
  expect_eq(win(q, key), "'2026-12-01 10:00:00+00'..'2026-12-01 10:15:00+00'", "15 minutes");
  expect_eq(name(q, key), "_p20261201_100000", "15 minutes: named with the time of day");
  const KeySpace q_kolkata = unit::tstz(Cut::kMicroseconds, 15 * kUsPerMin, kolkata);
  expect_eq(win(q_kolkata, key), "'2026-12-01 10:00:00+00'..'2026-12-01 10:15:00+00'",
            "15 minutes in +05:30: the same bounds");
  expect_eq(name(q_kolkata, key), "_p20261201_153000", "15 minutes in +05:30: a local name");
  const KeySpace hour_kolkata = unit::tstz(Cut::kMicroseconds, kUsPerHour, kolkata);
  expect_eq(win(hour_kolkata, key), "'2026-12-01 10:00:00+00'..'2026-12-01 11:00:00+00'",
            "an hour in +05:30: from :00 UTC");
  expect_eq(name(hour_kolkata, key), "_p20261201_153000", "an hour in +05:30: half past, locally");
  // Epoch-aligned: 1970-01-01 00:00 UTC starts a window of every length that divides a day.
  int misaligned = 0;
  for (int64_t secs : {1, 2, 3, 60, 900, 3600, 5400, 7200, 43200}) {
    const KeySpace ks = unit::tstz(Cut::kMicroseconds, secs * kUsPerSec, utc);
    Range r = ks.window(ks.number_of(at(1970, 1, 1)));
    if (r.lower.value != at(1970, 1, 1)) ++misaligned;
  }
  expect_eq(misaligned, 0, "fixed lengths: 1970-01-01 00:00 UTC starts a window of each length");

  const KeySpace sec = unit::tstz(Cut::kMicroseconds, kUsPerSec, utc);
  const int64_t fraction = at(2026, 12, 1, 10, 7, 3) + 999999;
  expect_eq(sec.number_of(fraction), 849434823, "1 second: window number");
  expect_eq(win(sec, fraction), "'2026-12-01 10:07:03+00'..'2026-12-01 10:07:04+00'", "1 second");
  expect_eq(sec.key_text(fraction), "2026-12-01 10:07:03.999999+00", "key text with microseconds");
  expect_eq(name(sec, fraction), "_p20261201_100703", "1 second: its name");
  expect_eq(sec.number_of(-1), -1, "1 second: the microsecond before 2000 is window -1");
  expect_eq(win(sec, -1), "'1999-12-31 23:59:59+00'..'2000-01-01 00:00:00+00'",
            "1 second before 2000");
  expect_eq(win(q, at(1969, 7, 20, 20, 17, 40)),
            "'1969-07-20 20:15:00+00'..'1969-07-20 20:30:00+00'", "15 minutes before 1970");
  expect_eq(q.number_of(at(1969, 7, 20, 20, 17, 40)), -1067631,
            "15 minutes before 1970: its number");
  const KeySpace ninety = unit::tstz(Cut::kMicroseconds, 90 * kUsPerMin, utc);
  expect_eq(win(ninety, at(2026, 12, 1, 23, 59)),
            "'2026-12-01 22:30:00+00'..'2026-12-02 00:00:00+00'",
            "90 minutes meet at UTC midnight");
  const KeySpace two = unit::ts(Cut::kMicroseconds, 2 * kUsPerSec);
  expect_eq(win(two, at(2026, 12, 1, 10, 7, 3)), "'2026-12-01 10:07:02'..'2026-12-01 10:07:04'",
            "2 seconds, timestamp key");
  expect_eq(two.suffix(two.window(two.number_of(at(2026, 12, 1, 10, 7, 3))).lower),
            "_p20261201_100702", "2 seconds, timestamp key: its name");
  expect_eq(sec.mark_of(sec.number_of(fraction), 80), at(2026, 12, 1, 10, 7, 3) + 800000,
            "1 second: the mark at 80%");
}

// A zone with DST by the EU's rule (zones.hpp): 2026's changes are at
// 01:00 UTC on 29 March and 25 October.
void dst() {
  const unit::RuleZone eu = unit::eu_zone(2025, 2027);
  const KeySpace day = unit::tstz(Cut::kDays, 1, eu);
  expect_eq(win(day, at(2026, 3, 28, 12)), "'2026-03-27 23:00:00+00'..'2026-03-28 23:00:00+00'",
            "Berlin: 28 March");
  expect_eq(win(day, at(2026, 3, 29, 12)), "'2026-03-28 23:00:00+00'..'2026-03-29 22:00:00+00'",
            "Berlin: 29 March");
  expect_eq(win(day, at(2026, 3, 30, 12)), "'2026-03-29 22:00:00+00'..'2026-03-30 22:00:00+00'",
            "Berlin: 30 March");
  expect_eq(win(day, at(2026, 10, 24, 12)), "'2026-10-23 22:00:00+00'..'2026-10-24 22:00:00+00'",
            "Berlin: 24 October");
  expect_eq(win(day, at(2026, 10, 25, 12)), "'2026-10-24 22:00:00+00'..'2026-10-25 23:00:00+00'",
            "Berlin: 25 October");
  expect_eq(win(day, at(2026, 10, 26, 12)), "'2026-10-25 23:00:00+00'..'2026-10-26 23:00:00+00'",
            "Berlin: 26 October");
  const int64_t spring = day.number_of(at(2026, 3, 29, 12)),
                autumn = day.number_of(at(2026, 10, 25, 12));
  expect_eq(length(day, spring), 23 * kUsPerHour, "the spring DST day is 23 hours");
  expect_eq(length(day, autumn), 25 * kUsPerHour, "the autumn DST day is 25 hours");
  expect_eq(length(day, spring - 1), 24 * kUsPerHour, "the day before it is 24 hours");
  expect_eq(name(day, at(2026, 3, 29, 12)), "_p20260329", "the 23-hour day's name");
  expect_eq(name(day, at(2026, 10, 25, 0)), "_p20261025", "the 25-hour day's name");
  // Around the change: the skipped hour and the repeated one.
  expect_eq(day.number_of(at(2026, 3, 29, 1)), spring, "01:00 UTC, 03:00 CEST: the spring day");
  expect_eq(day.number_of(at(2026, 3, 29, 0, 59)), spring, "00:59 UTC, 01:59 CET: the spring day");
  expect_eq(day.number_of(at(2026, 10, 25, 0, 30)), autumn,
            "02:30 CEST, before the change: the autumn day");
  expect_eq(day.number_of(at(2026, 10, 25, 1, 30)), autumn,
            "02:30 CET, after the change: the same day");
  expect_eq(day.number_of(at(2026, 10, 25, 22, 59)), autumn, "23:59 CET: still the autumn day");
  expect_eq(day.mark_of(spring, 80), at(2026, 3, 29, 17, 24),
            "the 23-hour day's mark is at 18.4 hours");
  expect_eq(day.mark_of(autumn, 80), at(2026, 10, 25, 18, 0),
            "the 25-hour day's mark is at 20 hours");
  expect_eq(win(unit::tstz(Cut::kDays, 7, eu), at(2026, 3, 29, 12)),
            "'2026-03-22 23:00:00+00'..'2026-03-29 22:00:00+00'",
            "Berlin: the week ending on the spring day");
  expect_eq(win(unit::tstz(Cut::kMonths, 1, eu), at(2026, 3, 15)),
            "'2026-02-28 23:00:00+00'..'2026-03-31 22:00:00+00'", "Berlin: March");
  expect_eq(win(unit::tstz(Cut::kMonths, 1, eu), at(2026, 10, 31, 22, 30)),
            "'2026-09-30 22:00:00+00'..'2026-10-31 23:00:00+00'",
            "Berlin: October, 31 days and an hour");
  expect_eq(win(unit::tstz(Cut::kMonths, 1, eu), at(2026, 10, 31, 23, 30)),
            "'2026-10-31 23:00:00+00'..'2026-11-30 23:00:00+00'",
            "Berlin: 23:30 UTC on 31 October is November");

  // Under a day, the zone changes only names: two windows named after the
  // repeated 02:00, none after the skipped one.
  const KeySpace hour = unit::tstz(Cut::kMicroseconds, kUsPerHour, eu);
  expect_eq(win(hour, at(2026, 10, 25, 1, 30)),
            "'2026-10-25 01:00:00+00'..'2026-10-25 02:00:00+00'",
            "an hour in Berlin: the bounds are UTC hours");
  expect_eq(name(hour, at(2026, 10, 25, 0, 30)), "_p20261025_020000", "the first 02:00 CEST");
  expect_eq(name(hour, at(2026, 10, 25, 1, 30)), "_p20261025_020000", "the repeated 02:00 CET");
  expect_eq(name(hour, at(2026, 3, 29, 0, 30)), "_p20260329_010000", "01:00 CET");
  expect_eq(name(hour, at(2026, 3, 29, 1, 30)), "_p20260329_030000", "then 03:00 CEST");

  // A zone whose change skips local midnight (UTC-4 to UTC-3 at 04:00
  // UTC on 2026-09-06): the day begins at 01:00, read as PostgreSQL reads a
  // skipped time, and the day is 23 hours with no hole.
  const unit::RuleZone skip(-4 * kUsPerHour, {{at(2026, 9, 6, 4), -3 * kUsPerHour}});
  const KeySpace skip_day = unit::tstz(Cut::kDays, 1, skip);
  expect_eq(win(skip_day, at(2026, 9, 5, 12)), "'2026-09-05 04:00:00+00'..'2026-09-06 04:00:00+00'",
            "midnight skipped: the day before");
  expect_eq(win(skip_day, at(2026, 9, 6, 12)), "'2026-09-06 04:00:00+00'..'2026-09-07 03:00:00+00'",
            "midnight skipped: the day begins at 01:00 local");
  expect_eq(name(skip_day, at(2026, 9, 6, 12)), "_p20260906",
            "midnight skipped: the day keeps its name");
  // A zone may read the skipped midnight as the earlier instant, 23:00 the
  // evening before: then the day begins there, and a key after it is in it.
  const unit::RuleZone skip_early(-4 * kUsPerHour, {{at(2026, 9, 6, 4), -3 * kUsPerHour}}, true);
  const KeySpace early_day = unit::tstz(Cut::kDays, 1, skip_early);
  expect_eq(win(early_day, at(2026, 9, 6, 3, 30)),
            "'2026-09-06 03:00:00+00'..'2026-09-07 03:00:00+00'",
            "midnight skipped, read early: 23:30 local the evening before is in the new day");
  expect_eq(win(early_day, at(2026, 9, 6, 2, 59)),
            "'2026-09-05 04:00:00+00'..'2026-09-06 03:00:00+00'",
            "midnight skipped, read early: the day before has 23 hours");
  // And one that repeats it (UTC+2 to UTC+1 at 23:00 UTC on 2026-10-24):
  // the later midnight begins the day, as PostgreSQL reads a repeated time.
  const unit::RuleZone repeat(2 * kUsPerHour, {{at(2026, 10, 24, 23), kUsPerHour}});
  const KeySpace repeat_day = unit::tstz(Cut::kDays, 1, repeat);
  expect_eq(win(repeat_day, at(2026, 10, 24, 12)),
            "'2026-10-23 22:00:00+00'..'2026-10-24 23:00:00+00'",
            "midnight repeated: the day before has 25 hours");
  expect_eq(repeat_day.number_of(at(2026, 10, 24, 22, 30)),
            repeat_day.number_of(at(2026, 10, 24, 12)),
            "midnight repeated: 00:30 before the change is still the day before");
  expect_eq(win(repeat_day, at(2026, 10, 25, 12)),
            "'2026-10-24 23:00:00+00'..'2026-10-25 23:00:00+00'",
            "midnight repeated: the day from the second midnight");
  expect_eq(name(repeat_day, at(2026, 10, 25, 12)), "_p20261025", "midnight repeated: its name");
}

void limits() {
  unit::FixedZone utc(0), east(2 * kUsPerHour), west(-5 * kUsPerHour);
  const int64_t lo = unit::kTimestampMin, hi = unit::kTimestampMax;
  const KeySpace day = unit::tstz(Cut::kDays, 1, utc);
  expect_eq(day.finite(lo), true, "the first timestamp is finite");
  expect_eq(day.finite(lo - 1), false, "below it is not");
  expect_eq(day.finite(hi), true, "the last timestamp is finite");
  expect_eq(day.finite(hi + 1), false, "past it is not");
  expect_eq(day.finite(std::numeric_limits<int64_t>::max()), false, "infinity");
  expect_eq(day.finite(std::numeric_limits<int64_t>::min()), false, "-infinity");
  expect_eq(day.key_text(lo), "4714-11-24 00:00:00+00 BC", "the first timestamp's text");
  expect_eq(day.key_text(hi), "294276-12-31 23:59:59.999999+00", "the last timestamp's text");
  expect_eq(win(day, lo), "MINVALUE..'4714-11-25 00:00:00+00 BC'", "the first day: from MINVALUE");
  expect_eq(win(day, hi), "'294276-12-31 00:00:00+00'..MAXVALUE", "the last day: to MAXVALUE");
  expect_eq(name(day, hi), "_p2942761231", "the last day's name");
  expect_eq(name(day, lo), "_pmin", "the first day's name");
  int64_t first = 0;
  expect_eq(day.first_key_of(day.number_of(lo), &first), true, "the first day has a first key");
  expect_eq(first, lo, "the first day's first key is the first timestamp");
  expect_eq(day.first_key_of(day.number_of(hi) + 1, &first), false, "no day after the last");
  expect_eq(day.first_key_of(day.number_of(lo) - 1, &first), false, "no day before the first");
  const KeySpace day_east = unit::tstz(Cut::kDays, 1, east);
  expect_eq(win(day_east, lo), "MINVALUE..'4714-11-24 22:00:00+00 BC'", "the first day in +02:00");
  expect_eq(win(day_east, at(100000, 1, 1, 23)),
            "'100000-01-01 22:00:00+00'..'100000-01-02 22:00:00+00'",
            "in +02:00 in the year 100000: still local midnights");
  const KeySpace day_west = unit::tstz(Cut::kDays, 1, west);
  expect_eq(day_west.number_of(lo), unit::kDateMin - 1,
            "in -05:00 the first timestamp is on the day before");
  expect_eq(win(day_west, lo), "MINVALUE..'4714-11-24 05:00:00+00 BC'", "the first day in -05:00");
  expect_eq(win(unit::tstz(Cut::kMonths, 1, utc), hi), "'294276-12-01 00:00:00+00'..MAXVALUE",
            "the last month");
  expect_eq(win(unit::tstz(Cut::kMonths, 12, utc), lo), "MINVALUE..'4713-01-01 00:00:00+00 BC'",
            "the first year");
  expect_eq(win(unit::tstz(Cut::kMicroseconds, 15 * kUsPerMin, utc), lo),
            "MINVALUE..'4714-11-24 00:15:00+00 BC'", "the first 15 minutes");
  expect_eq(win(unit::tstz(Cut::kMicroseconds, 15 * kUsPerMin, utc), hi),
            "'294276-12-31 23:45:00+00'..MAXVALUE", "the last 15 minutes");
  expect_eq(win(unit::ts(Cut::kDays, 7), hi), "'294276-12-25 00:00:00'..MAXVALUE",
            "the last week, timestamp key (Monday 25 December)");
  expect_eq(win(unit::ts(Cut::kDays, 1), lo), "MINVALUE..'4714-11-25 00:00:00 BC'",
            "the first day, timestamp key");

  const KeySpace dates = unit::date(Cut::kDays, 1);
  expect_eq(dates.finite(unit::kDateMin), true, "the first date is finite");
  expect_eq(dates.finite(unit::kDateMax + 1), false, "past the last date is not");
  expect_eq(dates.key_text(unit::kDateMax), "5874897-12-31", "the last date's text");
  expect_eq(win(dates, unit::kDateMin), "MINVALUE..'4714-11-25 BC'", "the first date");
  expect_eq(win(dates, unit::kDateMax), "'5874897-12-31'..MAXVALUE", "the last date");
  expect_eq(win(dates, unit::kDateMax - 1), "'5874897-12-30'..'5874897-12-31'",
            "the day before the last date ends at it, not at MAXVALUE");
  expect_eq(win(unit::date(Cut::kMonths, 3), unit::kDateMax), "'5874897-10-01'..MAXVALUE",
            "the last quarter of dates");
  expect_eq(win(unit::date(Cut::kMonths, 1), unit::kDateMin), "MINVALUE..'4714-12-01 BC'",
            "the first month of dates");
  expect_eq(dates.time_of(days_of(2026, 12, 1)), at(2026, 12, 1),
            "a date stands for its UTC midnight");
  expect_eq(dates.key_at(at(2026, 12, 1, 23, 59)), days_of(2026, 12, 1),
            "now's date is the UTC date");
  expect_eq(dates.key_at(-1), -1, "the UTC date of the microsecond before 2000 is 1999-12-31");
  expect_eq(day.key_at(at(2026, 12, 1, 23, 59)), at(2026, 12, 1, 23, 59),
            "a timestamptz key is now itself");

  // Before 2000 and before Christ.
  expect_eq(win(day, at(1970, 1, 1)), "'1970-01-01 00:00:00+00'..'1970-01-02 00:00:00+00'",
            "1970-01-01");
  expect_eq(day.number_of(at(1970, 1, 1)), -10957, "1970-01-01 is day -10957");
  expect_eq(win(day, at(0, 12, 31, 23)), "'0001-12-31 00:00:00+00 BC'..'0001-01-01 00:00:00+00'",
            "the last day BC");
  expect_eq(name(day, at(0, 12, 31, 23)), "_p00011231bc", "a BC name");
  expect_eq(win(dates, days_of(-99, 3, 1)), "'0100-03-01 BC'..'0100-03-02 BC'", "a date BC");
}

void clipped() {
  unit::FixedZone utc(0);
  const KeySpace day = unit::tstz(Cut::kDays, 1, utc);
  const std::vector<Range> morning = {
      Range{Bound::at(at(2026, 12, 1)), Bound::at(at(2026, 12, 1, 12))}};
  Range rest = day.covering(at(2026, 12, 1, 13), morning);
  expect_eq(sql(day, rest), "'2026-12-01 12:00:00+00'..'2026-12-02 00:00:00+00'",
            "the rest of a day made in part by hand");
  expect_eq(day.suffix(rest.lower), "_p20261201",
            "a clipped day is named after its own lower bound");
  expect_eq(sql(day, day.covering(at(2026, 12, 2, 1), morning)),
            "'2026-12-02 00:00:00+00'..'2026-12-03 00:00:00+00'", "the next day is whole again");
  std::vector<Range> both = morning;
  both.push_back(Range{Bound::at(at(2026, 12, 1, 18)), Bound::max()});
  expect_eq(sql(day, day.covering(at(2026, 12, 1, 13), both)),
            "'2026-12-01 12:00:00+00'..'2026-12-01 18:00:00+00'", "clipped at both ends");
  const std::vector<Range> open_below = {Range{Bound::min(), Bound::at(at(2026, 12, 1, 6))}};
  expect_eq(sql(day, day.covering(at(2026, 12, 1, 7), open_below)),
            "'2026-12-01 06:00:00+00'..'2026-12-02 00:00:00+00'",
            "after a partition from MINVALUE");
  expect_eq(sql(day, day.covering(at(2026, 12, 1, 7),
                                  {Range{Bound::at(at(2026, 11, 1)), Bound::at(at(2026, 11, 2))}})),
            "'2026-12-01 00:00:00+00'..'2026-12-02 00:00:00+00'",
            "a partition far away changes nothing");
  // A month made by another tool from the 15th: the next window is clipped,
  // the one after is aligned again.
  const KeySpace month = unit::tstz(Cut::kMonths, 1, utc);
  const std::vector<Range> other = {
      Range{Bound::at(at(2026, 11, 15)), Bound::at(at(2026, 12, 15))}};
  expect_eq(sql(month, month.covering(at(2026, 12, 20), other)),
            "'2026-12-15 00:00:00+00'..'2027-01-01 00:00:00+00'",
            "a month after one not aligned: clipped");
  expect_eq(sql(month, month.covering(at(2026, 11, 3), other)),
            "'2026-11-01 00:00:00+00'..'2026-11-15 00:00:00+00'",
            "a month before one not aligned: clipped");
  expect_eq(sql(month, month.covering(at(2027, 1, 5), other)),
            "'2027-01-01 00:00:00+00'..'2027-02-01 00:00:00+00'", "and the next month is aligned");
  // Clipped on the 25-hour day.
  const unit::RuleZone eu = unit::eu_zone(2026, 2026);
  const KeySpace berlin = unit::tstz(Cut::kDays, 1, eu);
  const std::vector<Range> night = {
      Range{Bound::at(at(2026, 10, 24, 22)), Bound::at(at(2026, 10, 25, 2))}};
  expect_eq(sql(berlin, berlin.covering(at(2026, 10, 25, 2), night)),
            "'2026-10-25 02:00:00+00'..'2026-10-25 23:00:00+00'", "the 25-hour day, clipped");
  // Up to the type's limit.
  expect_eq(sql(day, day.covering(unit::kTimestampMax,
                                  {Range{Bound::at(at(2026, 1, 1)), Bound::at(at(2026, 1, 2))}})),
            "'294276-12-31 00:00:00+00'..MAXVALUE", "clipped to the type: MAXVALUE");
  const KeySpace dates = unit::date(Cut::kDays, 7);
  expect_eq(
      sql(dates, dates.covering(days_of(2026, 12, 3), {Range{Bound::at(days_of(2026, 12, 2)),
                                                             Bound::at(days_of(2026, 12, 3))}})),
      "'2026-12-03'..'2026-12-07'", "a week of dates after a day made by hand");
  expect_eq(
      sql(dates, dates.covering(days_of(2026, 12, 1), {Range{Bound::at(days_of(2026, 12, 2)),
                                                             Bound::at(days_of(2026, 12, 3))}})),
      "'2026-11-30'..'2026-12-02'",
      "a week of dates before a day made by hand, the day after the key");
}

// Consecutive windows over many years: each ends where the next begins, is
// not empty, holds exactly its keys, and starts where its cut says.
struct Sweep {
  int64_t windows = 0;
  int bad = 0;
  std::string first_bad;
};

Sweep sweep(const KeySpace& ks, const partheal::partitions::Zone* zone, int64_t from_key,
            int64_t to_key, int want_weekday, bool want_first_of_month) {
  Sweep s;
  auto fail = [&](int64_t n, const std::string& what) {
    if (s.bad++ == 0) s.first_bad = "window " + std::to_string(n) + ": " + what;
  };
  const int64_t first = ks.number_of(from_key), last = ks.number_of(to_key);
  for (int64_t n = first; n <= last; ++n) {
    ++s.windows;
    Range r = ks.window(n), next = ks.window(n + 1);
    if (r.lower.kind != Bound::Kind::kValue || r.upper.kind != Bound::Kind::kValue) {
      fail(n, "unbounded");
      continue;
    }
    const int64_t lo = r.lower.value, hi = r.upper.value;
    if (hi != next.lower.value) fail(n, "a hole or an overlap before the next");
    if (lo >= hi) fail(n, "empty");
    if (ks.number_of(lo) != n) fail(n, "its lower bound is not in it");
    if (ks.number_of(hi - 1) != n) fail(n, "its last key is not in it");
    if (ks.number_of(hi) != n + 1) fail(n, "its upper bound is not in the next");
    int64_t first_key = 0;
    if (!ks.first_key_of(n, &first_key) || first_key != lo)
      fail(n, "first_key_of is not its lower bound");
    const int64_t mark = ks.mark_of(n, 80);
    if (mark <= lo || mark >= hi) fail(n, "its mark is outside it");
    if (zone != nullptr || ks.spec().date_key || !ks.spec().zoned) {
      // Local midnights, Mondays, firsts of the month.
      int64_t local = ks.spec().date_key ? lo * kUsPerDay
                      : zone != nullptr  ? zone->local_of(lo)
                                         : lo;
      if (ks.spec().cut != Cut::kMicroseconds && local % kUsPerDay != 0)
        fail(n, "not at local midnight");
      int64_t day = local / kUsPerDay - (local % kUsPerDay < 0);
      if (want_weekday >= 0 && unit::weekday(day) != want_weekday) fail(n, "not on the weekday");
      int64_t y = 0;
      int m = 0, d = 0;
      civil_from_days(day, &y, &m, &d);
      if (want_first_of_month && (d != 1 || days_of(y, m, d) != day))
        fail(n, "not on the first of a month");
      if (ks.suffix(r.lower).substr(0, 10) != "_p" + std::to_string(y * 10000 + m * 100 + d))
        fail(n, "not named after its local date");
    }
  }
  return s;
}

void no_holes() {
  const unit::RuleZone eu = unit::eu_zone(1990, 2040);
  unit::FixedZone kolkata(5 * kUsPerHour + 30 * kUsPerMin), west(-8 * kUsPerHour);
  const int64_t from = at(1990, 1, 1), to = at(2039, 12, 31);
  auto check = [&](const char* what, const KeySpace& ks, const partheal::partitions::Zone* zone,
                   int64_t want, int wd = -1, bool first_of_month = false, int64_t f = 0,
                   int64_t t = 0) {
    Sweep s = sweep(ks, zone, f != 0 ? f : from, t != 0 ? t : to, wd, first_of_month);
    expect_eq(
        s.bad, 0,
        std::string(what) + ": no hole, no overlap, every key in its window (" + s.first_bad + ")");
    expect_eq(s.windows, want, std::string(what) + ": the number of windows swept");
  };
  const int64_t days = days_of(2040, 1, 1) - days_of(1990, 1, 1);
  check("days in Berlin", unit::tstz(Cut::kDays, 1, eu), &eu, days);
  check("weeks in Berlin", unit::tstz(Cut::kDays, 7, eu), &eu, 2609, 0);
  check("months in Berlin", unit::tstz(Cut::kMonths, 1, eu), &eu, 600, -1, true);
  check("quarters in Berlin", unit::tstz(Cut::kMonths, 3, eu), &eu, 200, -1, true);
  check("years in Berlin", unit::tstz(Cut::kMonths, 12, eu), &eu, 50, -1, true);
  check("days in +05:30", unit::tstz(Cut::kDays, 1, kolkata), &kolkata, days);
  check("months in -08:00", unit::tstz(Cut::kMonths, 1, west), &west, 600, -1, true,
        at(1990, 1, 1, 12));
  check("days, timestamp key", unit::ts(Cut::kDays, 1), nullptr, days);
  check("weeks, date key", unit::date(Cut::kDays, 7), nullptr, 2609, 0, false, days_of(1990, 1, 1),
        days_of(2039, 12, 31));
  check("months, date key", unit::date(Cut::kMonths, 1), nullptr, 600, -1, true,
        days_of(1990, 1, 1), days_of(2039, 12, 31));
  check("15 minutes in Berlin", unit::tstz(Cut::kMicroseconds, 15 * kUsPerMin, eu), &eu,
        4 * 24 * 730, -1, false, at(2025, 1, 1), at(2026, 12, 31, 23, 59));

  // Berlin's days: one of 23 hours and one of 25 a year, the rest 24.
  const KeySpace day = unit::tstz(Cut::kDays, 1, eu);
  int short_days = 0, long_days = 0, other = 0;
  for (int64_t n = day.number_of(from); n <= day.number_of(to); ++n) {
    int64_t len = length(day, n);
    if (len == 23 * kUsPerHour)
      ++short_days;
    else if (len == 25 * kUsPerHour)
      ++long_days;
    else if (len != 24 * kUsPerHour)
      ++other;
  }
  expect_eq(short_days, 50, "Berlin 1990-2039: 50 days of 23 hours");
  expect_eq(long_days, 50, "Berlin 1990-2039: 50 days of 25 hours");
  expect_eq(other, 0, "Berlin 1990-2039: every other day is 24 hours");
}

}  // namespace

void time_cuts() {
  civil_calendar();
  interval_cuts();
  days_and_weeks();
  months();
  fixed_lengths();
  dst();
  limits();
  clipped();
  no_holes();
}
