// Fake zones and a plain calendar for the unit tests of time keys: fixed
// offsets, and zones whose offset changes at given instants, written by
// rule. Nothing here comes from the code under test, so it can be checked
// against it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "partitions/key_space.hpp"

namespace unit {

constexpr int64_t kUsPerSec = 1000000;
constexpr int64_t kUsPerMin = 60 * kUsPerSec;
constexpr int64_t kUsPerHour = 60 * kUsPerMin;
constexpr int64_t kUsPerDay = 24 * kUsPerHour;

inline bool leap(int64_t y) {
  return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

inline int month_days(int64_t y, int m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : kDays[m - 1];
}

// Days since 2000-01-01 of a proleptic Gregorian date (year 0 is 1 BC),
// counted year by year: slow and plain, unlike the code under test.
inline int64_t days_of(int64_t y, int m, int d) {
  int64_t days = 0;
  for (int64_t yy = 2000; yy < y; ++yy) days += leap(yy) ? 366 : 365;
  for (int64_t yy = y; yy < 2000; ++yy) days -= leap(yy) ? 366 : 365;
  for (int mm = 1; mm < m; ++mm) days += month_days(y, mm);
  return days + d - 1;
}

// Microseconds since 2000-01-01 00:00 (UTC, or a wall clock).
inline int64_t at(int64_t y, int m, int d, int hh = 0, int mi = 0, int ss = 0) {
  return days_of(y, m, d) * kUsPerDay + hh * kUsPerHour + mi * kUsPerMin + ss * kUsPerSec;
}

// 0 for Monday ... 6 for Sunday; 2000-01-01 was a Saturday.
inline int weekday(int64_t days) {
  return static_cast<int>(((days % 7) + 7 + 5) % 7);
}

class FixedZone final : public partheal::partitions::Zone {
 public:
  explicit FixedZone(int64_t offset) : offset_(offset) {}
  int64_t local_of(int64_t utc) const override { return utc + offset_; }
  int64_t utc_of(int64_t local) const override { return local - offset_; }

 private:
  int64_t offset_;
};

// A zone at `base` offset that changes to each change's offset at its UTC
// instant (in order). A wall-clock time it skips is read with the offset
// before the change, one it repeats with the offset after it: PostgreSQL's
// rule (DetermineTimeZoneOffset), which always gives the later instant.
// With `earlier`, the other reading: the Zone interface allows either.
class RuleZone final : public partheal::partitions::Zone {
 public:
  RuleZone(int64_t base, std::vector<std::pair<int64_t, int64_t>> changes, bool earlier = false)
      : base_(base), changes_(std::move(changes)), earlier_(earlier) {}

  int64_t offset_at(int64_t utc) const {
    int64_t off = base_;
    for (const auto& c : changes_) {
      if (utc < c.first) break;
      off = c.second;
    }
    return off;
  }
  int64_t local_of(int64_t utc) const override { return utc + offset_at(utc); }
  int64_t utc_of(int64_t local) const override {
    // Period i has offset off(i) from changes_[i-1].first (or forever
    // before) until changes_[i].first (or forever after).
    auto off = [&](size_t i) { return i == 0 ? base_ : changes_[i - 1].second; };
    auto starts = [&](size_t i, int64_t u) { return i == 0 || u >= changes_[i - 1].first; };
    auto ends = [&](size_t i, int64_t u) { return i == changes_.size() || u < changes_[i].first; };
    bool found = false;
    int64_t out = 0;
    for (size_t i = 0; i <= changes_.size(); ++i) {
      int64_t u = local - off(i);
      if (starts(i, u) && ends(i, u) && !(found && earlier_)) {
        found = true;  // the last one found is the reading after a change
        out = u;
      }
    }
    if (found) return out;
    // Skipped: the change whose period before reads it too late and whose
    // period after reads it too early; the offset before it (or after it).
    for (size_t k = 1; k <= changes_.size(); ++k)
      if (!ends(k - 1, local - off(k - 1)) && !starts(k, local - off(k)))
        return local - off(earlier_ ? k : k - 1);
    return local - base_;
  }

 private:
  int64_t base_;
  std::vector<std::pair<int64_t, int64_t>> changes_;
  bool earlier_;
};

// The European Union's rule, as Europe/Berlin has kept it since 1996, for
// the years given: UTC+1, and UTC+2 from 01:00 UTC on the last Sunday of
// March to 01:00 UTC on the last Sunday of October.
inline RuleZone eu_zone(int64_t from_year, int64_t to_year) {
  std::vector<std::pair<int64_t, int64_t>> changes;
  auto last_sunday = [](int64_t y, int m) {
    int64_t d = days_of(y, m, month_days(y, m));
    while (weekday(d) != 6) --d;
    return d;
  };
  for (int64_t y = from_year; y <= to_year; ++y) {
    changes.emplace_back(last_sunday(y, 3) * kUsPerDay + kUsPerHour, 2 * kUsPerHour);
    changes.emplace_back(last_sunday(y, 10) * kUsPerDay + kUsPerHour, kUsPerHour);
  }
  return RuleZone(kUsPerHour, changes);
}

// PostgreSQL's limits of the time types, as the registration reads them
// (partitions/time_zone.cpp): microseconds or days since 2000-01-01.
constexpr int64_t kTimestampMin = -211813488000000000LL;      // 4714-11-24 BC 00:00
constexpr int64_t kTimestampMax = 9223371331200000000LL - 1;  // 294276-12-31 23:59:59.999999
constexpr int64_t kDateMin = -2451545;                        // 4714-11-24 BC
constexpr int64_t kDateMax = 2147483494 - 2451545 - 1;        // 5874897-12-31

inline partheal::partitions::KeySpec time_spec(partheal::partitions::Cut cut, int64_t step,
                                               bool zoned) {
  partheal::partitions::KeySpec spec;
  spec.cut = cut;
  spec.step = step;
  spec.zoned = zoned;
  spec.min = kTimestampMin;
  spec.max = kTimestampMax;
  const char* zone = zoned ? "Test/Zone" : "UTC";
  for (int i = 0; zone[i] != '\0'; ++i) spec.zone[i] = zone[i];
  return spec;
}

// A timestamptz key cut in `zone`.
inline partheal::partitions::KeySpace tstz(partheal::partitions::Cut cut, int64_t step,
                                           const partheal::partitions::Zone& zone) {
  return partheal::partitions::KeySpace(time_spec(cut, step, true), &zone);
}

// A timestamp key: the wall clock, no zone.
inline partheal::partitions::KeySpace ts(partheal::partitions::Cut cut, int64_t step) {
  return partheal::partitions::KeySpace(time_spec(cut, step, false));
}

// A date key.
inline partheal::partitions::KeySpace date(partheal::partitions::Cut cut, int64_t step) {
  partheal::partitions::KeySpec spec = time_spec(cut, step, false);
  spec.date_key = true;
  spec.min = kDateMin;
  spec.max = kDateMax;
  return partheal::partitions::KeySpace(spec);
}

}  // namespace unit
