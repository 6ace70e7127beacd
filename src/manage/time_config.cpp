// The time form of partheal_manage: what its arguments may be.
#include <fmt/format.h>

#include <cctype>
#include <string>

#include "manage/time_internal.hpp"
#include "partitions/key_space.hpp"
#include "partitions/time_zone.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

namespace partheal::manage {

namespace {

constexpr const char* kIntervalHint =
    "Give '1 day', '1 week' (from Monday), a number of months that divides a year ('1 month', "
    "'3 months', '6 months', '1 year'), or, for timestamps, an interval under a day that divides "
    "a day into whole seconds ('1 hour', '15 minutes', '2 seconds').";

std::string type_name(Oid type) {
  return pg::guard([&] { return format_type_be(type); });
}

[[noreturn]] void null_argument(const char* name, const char* hint) {
  pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, fmt::format("{} must not be NULL", name), {}, hint);
}

}  // namespace

void refuse_time_key_for_ids(const registry::TableShape& shape) {
  if (!shape.key_is_time) return;
  pg::fail(ERRCODE_DATATYPE_MISMATCH,
           fmt::format("partition key column \"{}\" of \"{}\" is a {}, not an id", shape.key_column,
                       shape.name, type_name(shape.key_type)),
           "partition_size is a number of ids; a time-keyed table is cut into windows of time.",
           fmt::format("Give a partition_interval: SELECT partheal_manage('{}', interval '1 day').",
                       shape.name));
}

registry::Config time_config(FunctionCallInfo fcinfo, const registry::TableShape& shape,
                             bool* drain_given, bool* keep_given, bool* reach_given) {
  if (PG_ARGISNULL(1))
    null_argument("partition_interval",
                  "Give the length of each window, for example interval "
                  "'1 day'.");
  if (!shape.key_is_time)
    pg::fail(ERRCODE_DATATYPE_MISMATCH,
             fmt::format("partition key column \"{}\" of \"{}\" is a {}, not a time",
                         shape.key_column, shape.name, type_name(shape.key_type)),
             "A partition_interval cuts a timestamptz, timestamp or date key into windows.",
             fmt::format("Give a partition_size for an id key: SELECT partheal_manage('{}', "
                         "100000).",
                         shape.name));
  const Interval* interval = pg::guard([&] { return PG_GETARG_INTERVAL_P(1); });
  registry::Config c;
  c.by_time = true;
  c.partition_size = 0;
  c.mark_percent = 80;
  c.interval_months = interval->month;
  c.interval_days = interval->day;
  c.interval_us = interval->time;
  partitions::IntervalCut cut = partitions::cut_of_interval(
      c.interval_months, c.interval_days, c.interval_us, shape.key_type == DATEOID);
  if (!cut.ok) {
    Datum d = IntervalPGetDatum(const_cast<Interval*>(interval));
    std::string shown =
        pg::guarded_text([&] { return DatumGetCString(DirectFunctionCall1(interval_out, d)); });
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("partition_interval '{}' cannot cut \"{}\" into windows: {}", shown,
                         shape.name, cut.why),
             {}, kIntervalHint);
  }
  if (PG_ARGISNULL(2))
    null_argument("premake",
                  "Give how many windows to keep made ahead, "
                  "for example 4 (the default).");
  c.premake = PG_GETARG_INT32(2);
  if (c.premake < 0 || c.premake > 1000)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("premake must be between 0 and 1000, not {}", c.premake), {},
             "premake is how many windows after now's are kept made; the default is 4.");
  if (!PG_ARGISNULL(3)) {
    const Interval* r = pg::guard([&] { return PG_GETARG_INTERVAL_P(3); });
    // Every field at or above zero, one above: a horizon in the past.
    if (r->month < 0 || r->day < 0 || r->time < 0 ||
        (r->month == 0 && r->day == 0 && r->time == 0)) {
      Datum d = IntervalPGetDatum(const_cast<Interval*>(r));
      std::string shown =
          pg::guarded_text([&] { return DatumGetCString(DirectFunctionCall1(interval_out, d)); });
      pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
               fmt::format("retention '{}' is not a positive interval", shown),
               "Windows whose upper bound is at or before now() - retention are detached.",
               "Give how long to keep rows, for example interval '30 days', or NULL to keep "
               "every window.");
    }
    // Past a thousand years, now() - retention leaves the timestamp range
    // for some keys, and every heal would fail on the horizon.
    if (r->month > 12000 || r->day > 366000 || r->time > 1000 * 366 * USECS_PER_DAY)
      pg::fail(ERRCODE_INVALID_PARAMETER_VALUE, "retention must be under 1000 years", {},
               "Give how long to keep rows, for example interval '30 days', or NULL to keep "
               "every window.");
    c.retention_months = r->month;
    c.retention_days = r->day;
    c.retention_us = r->time;
  }
  // NULL (0.6's default) keeps what the table has, as drain_default does:
  // a re-registration that leaves it out must not turn keeping into
  // dropping. 0.5's declaration defaults to false, and refuses retention.
  c.retention_keep_table = !PG_ARGISNULL(4) && PG_GETARG_BOOL(4);
  if (keep_given != nullptr) *keep_given = !PG_ARGISNULL(4);
  if (PG_ARGISNULL(5)) null_argument("time_zone", "Give a zone name, for example 'UTC'.");
  std::string zone = pg::guarded_text([&] { return text_to_cstring(PG_GETARG_TEXT_PP(5)); });
  // NULL (the default, and 0.5's declaration, which has no drain_default)
  // keeps what the table has: the caller (register_table) reads it.
  c.drain_default = PG_NARGS() > 6 && !PG_ARGISNULL(6) ? PG_GETARG_BOOL(6) : true;
  if (drain_given != nullptr) *drain_given = PG_NARGS() > 6 && !PG_ARGISNULL(6);
  // NULL (the default, and every declaration before 0.10's) keeps what the
  // table has, as drain_default does.
  const bool reach = PG_NARGS() > 7 && !PG_ARGISNULL(7);
  if (reach_given != nullptr) *reach_given = reach;
  if (reach) {
    const Interval* r = pg::guard([&] { return PG_GETARG_INTERVAL_P(7); });
    if (r->month < 0 || r->day < 0 || r->time < 0 ||
        (r->month == 0 && r->day == 0 && r->time == 0)) {
      Datum d = IntervalPGetDatum(const_cast<Interval*>(r));
      std::string shown =
          pg::guarded_text([&] { return DatumGetCString(DirectFunctionCall1(interval_out, d)); });
      pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
               fmt::format("drain_reach '{}' is not a positive interval", shown),
               "The drain makes windows for late rows in DEFAULT back to now() - drain_reach "
               "(1,000 windows at most).",
               "Give how late rows may arrive, for example interval '7 days', or NULL for the "
               "default, 30 days.");
    }
    if (r->month > 12000 || r->day > 366000 || r->time > 1000 * 366 * USECS_PER_DAY)
      pg::fail(ERRCODE_INVALID_PARAMETER_VALUE, "drain_reach must be under 1000 years", {},
               "Give how late rows may arrive, for example interval '7 days'; the drain makes "
               "1,000 windows back at most whatever it says.");
    c.drain_reach_months = r->month;
    c.drain_reach_days = r->day;
    c.drain_reach_us = r->time;
  }
  if (shape.key_type != TIMESTAMPTZOID) {
    if (zone != "UTC")
      pg::fail(
          ERRCODE_INVALID_PARAMETER_VALUE,
          fmt::format("a {} key has no time zone, so time_zone '{}' cannot apply",
                      type_name(shape.key_type), zone),
          fmt::format("The windows of \"{}\" are cut on the wall clock it stores.", shape.name),
          "Leave time_zone out, or make the key a timestamptz.");
    c.time_zone = "UTC";
    return c;
  }
  // The host's zone files that follow the host's own setting: a table cut in
  // one would move its windows with the machine it is restored on. Checked
  // by name before the lookup, since a server built with its own zone data
  // may not know them at all.
  std::string lower = zone;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "localtime" || lower == "posixrules")
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("time zone \"{}\" is the host's own zone, not a stable name", zone),
             "Its rules are whatever the machine's zone files say, and change when the table is "
             "restored or replicated onto another host.",
             "Give the zone by its name, for example 'Europe/Berlin' or 'UTC' (SHOW timezone "
             "names the server's).");
  if (zone.size() >= static_cast<size_t>(partitions::kZoneNameSize) ||
      partitions::zone_named(zone.c_str()) == nullptr)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("time zone \"{}\" is not recognized", zone), {},
             "Give a name from pg_timezone_names, for example 'Europe/Berlin' or 'UTC'.");
  // PostgreSQL reads such a name as a POSIX specification, west-positive:
  // a table registered in 'UTC+5' would cut its windows at 05:00 UTC.
  if (!partitions::in_zone_database(zone.c_str()))
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("time zone \"{}\" is not a name in the time zone database", zone),
             "PostgreSQL would read it as a POSIX time zone specification, whose offsets "
             "count west of Greenwich: 'UTC+5' is five hours behind UTC, not ahead.",
             "Give a name from pg_timezone_names, for example 'Asia/Karachi' for UTC+05:00 "
             "all year, or 'UTC'.");
  c.time_zone = zone;
  return c;
}

}  // namespace partheal::manage
