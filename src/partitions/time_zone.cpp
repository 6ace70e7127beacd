#include "partitions/time_zone.hpp"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "pg/boundary.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"
}

namespace partheal::partitions {

namespace {

// timestamp2tm and DetermineTimeZoneOffset only compute: they raise nothing.
class PgZone final : public Zone {
 public:
  explicit PgZone(pg_tz* tz) : tz_(tz) {}

  int64_t local_of(int64_t utc) const override {
    pg_tz* tz = tz_;
    return pg::guard([&] {
      struct pg_tm tm;
      fsec_t fsec = 0;
      int offset = 0;
      if (timestamp2tm(utc, &offset, &tm, &fsec, nullptr, tz) != 0) return utc;
      // offset is seconds west of Greenwich.
      return utc - static_cast<int64_t>(offset) * USECS_PER_SEC;
    });
  }

  // A local time the clocks skip gets PostgreSQL's instant, the moment of
  // the jump. One they repeat (going back) gets the earlier of its two
  // instants, where PostgreSQL picks the later: a window starting there
  // then holds both copies, so the day the clocks go back is the long one,
  // also where local midnight itself repeats (America/Havana, 1 November
  // 2026), and the key's local day and its window agree.
  int64_t utc_of(int64_t local) const override {
    pg_tz* tz = tz_;
    int64_t chosen = pg::guard([&] {
      struct pg_tm tm;
      fsec_t fsec = 0;
      if (timestamp2tm(local, nullptr, &tm, &fsec, nullptr, nullptr) != 0) return local;
      int offset = DetermineTimeZoneOffset(&tm, tz);
      return local + static_cast<int64_t>(offset) * USECS_PER_SEC;
    });
    // The offsets in force up to a day before: one of them is the offset
    // before the transition that repeats `local`, if there is one.
    for (int64_t hours : {1, 2, 3, 6, 12, 24}) {
      const int64_t probe = chosen - hours * 3600 * static_cast<int64_t>(USECS_PER_SEC);
      const int64_t candidate = local - (local_of(probe) - probe);
      if (candidate < chosen && local_of(candidate) == local) chosen = candidate;
    }
    return chosen;
  }

 private:
  pg_tz* tz_;
};

}  // namespace

const Zone* zone_named(const char* name) {
  // Never destroyed: zones are handed out for the process's life.
  static auto* zones = new std::map<std::string, std::unique_ptr<PgZone>>();
  auto it = zones->find(name);
  if (it != zones->end()) return it->second.get();
  pg_tz* tz = pg::guard([&] {
    pg_tz* found = pg_tzset(name);
    return found != nullptr && pg_tz_acceptable(found) ? found : nullptr;
  });
  if (tz == nullptr) return nullptr;
  auto zone = std::make_unique<PgZone>(tz);
  const Zone* out = zone.get();
  zones->emplace(name, std::move(zone));
  return out;
}

bool in_zone_database(const char* name) {
  // Never destroyed; read once per process, at a registration: the names
  // are the zone files, as pg_timezone_names lists them.
  static std::set<std::string>* names = nullptr;
  auto upper = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  };
  if (names == nullptr) {
    auto read = std::make_unique<std::set<std::string>>();
    pg_tzenum* dir = pg::guard([] { return pg_tzenumerate_start(); });
    for (;;) {
      const char* zone = pg::guard([&]() -> const char* {
        pg_tz* tz = pg_tzenumerate_next(dir);
        return tz == nullptr ? nullptr : pg_get_timezone_name(tz);
      });
      if (zone == nullptr) break;
      read->insert(upper(zone));
    }
    pg::guard([&] { pg_tzenumerate_end(dir); });
    names = read.release();
  }
  return names->count(upper(name)) > 0;
}

KeySpace space_of(const KeySpec& spec) {
  if (!spec.zoned) return KeySpace(spec);
  const Zone* zone = zone_named(spec.zone);
  if (zone == nullptr)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("time zone \"{}\" is not recognized", spec.zone),
             "The table was registered with it; the zone database no longer has it.",
             "Register the table again with partheal_manage(..., time_zone => ...).");
  return KeySpace(spec, zone);
}

int64 clock_offset(const KeySpace& keys, int64 now) {
  if (!keys.is_time() || keys.spec().zoned) return 0;
  return wall_clock_offset(now);
}

int64 wall_clock_offset(int64 now) {
  return pg::guard([&] {
    struct pg_tm tm;
    fsec_t fsec = 0;
    int offset = 0;
    if (timestamp2tm(now, &offset, &tm, &fsec, nullptr, session_timezone) != 0) return int64{0};
    return -static_cast<int64>(offset) * USECS_PER_SEC;
  });
}

int64 key_before_now(const KeySpace& keys, const char* zone, int32 months, int32 days, int64 us,
                     int64 now) {
  const bool zoned = keys.spec().zoned;
  const bool date_key = keys.spec().date_key;
  const int64 wall = now + clock_offset(keys, now);
  return pg::guard([&] {
    Interval retention;
    retention.month = months;
    retention.day = days;
    retention.time = us;
    Datum back = IntervalPGetDatum(&retention);
    if (zoned) {
      Datum zone_text = CStringGetTextDatum(zone);
      Datum local = DirectFunctionCall2(timestamptz_zone, zone_text, TimestampTzGetDatum(now));
      Datum earlier = DirectFunctionCall2(timestamp_mi_interval, local, back);
      return static_cast<int64>(
          DatumGetTimestampTz(DirectFunctionCall2(timestamp_zone, zone_text, earlier)));
    }
    Timestamp earlier = DatumGetTimestamp(
        DirectFunctionCall2(timestamp_mi_interval, TimestampGetDatum(wall), back));
    if (!date_key) return static_cast<int64>(earlier);
    int64 day = earlier / USECS_PER_DAY;
    if (earlier < 0 && earlier % USECS_PER_DAY != 0) --day;
    return day;
  });
}

bool time_key_limits(Oid type, int64* min, int64* max) {
  switch (type) {
    case TIMESTAMPOID:
    case TIMESTAMPTZOID:
      *min = MIN_TIMESTAMP;
      *max = END_TIMESTAMP - 1;
      return true;
    case DATEOID:
      *min = DATETIME_MIN_JULIAN - POSTGRES_EPOCH_JDATE;
      *max = DATE_END_JULIAN - POSTGRES_EPOCH_JDATE - 1;
      return true;
    default:
      return false;
  }
}

}  // namespace partheal::partitions
