// CALL partheal_partition_data(parent, window_size, batch_rows): empties the
// DEFAULT partition window by window, oldest first, each window created if
// missing and attached by attach/reconcile.hpp.
//
// A window's rows move and its table is attached in one transaction, so
// readers of the parent never miss a row; CALLed outside a transaction block,
// the procedure commits after each window, so no transaction grows with the
// size of DEFAULT, only with the size of a window.
#include <fmt/format.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "attach/reconcile.hpp"
#include "attach/window.hpp"
#include "pg/boundary.hpp"
#include "pg/own_sql.hpp"
#include "pg/report.hpp"
#include "pg/security.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

using namespace partheal;

namespace {

struct WindowSize {
  int64 integer = 0;         // integer keys
  int32 months = 0;          // time keys: whole months, or
  std::string interval;      // days and smaller units, as text for date_bin
  bool whole_days = false;   // days only, no smaller unit: calendar days
  bool whole_weeks = false;  // and a multiple of 7: calendar weeks, from Monday
};

const char* type_sql(Oid type) {
  switch (type) {
    case INT2OID:
      return "pg_catalog.int2";
    case INT4OID:
      return "pg_catalog.int4";
    case INT8OID:
      return "pg_catalog.int8";
    case DATEOID:
      return "pg_catalog.date";
    case TIMESTAMPOID:
      return "pg_catalog.timestamp";
    case TIMESTAMPTZOID:
      return "pg_catalog.timestamptz";
    default:
      return nullptr;
  }
}

bool is_integer(Oid type) {
  return type == INT2OID || type == INT4OID || type == INT8OID;
}

WindowSize parse_size(Oid type, const std::string& text) {
  WindowSize s;
  if (is_integer(type)) {
    size_t used = 0;
    try {
      s.integer = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || s.integer <= 0)
      pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
               fmt::format("window_size \"{}\" is not a positive integer", text), {},
               "An integer key is drained in windows of window_size values, such as '100000'.");
    return s;
  }
  const char* t = text.c_str();
  Interval iv = pg::guard([&] {
    return *DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(t),
                                                  ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
  });
  s.whole_days = iv.month == 0 && iv.day > 0 && iv.time == 0;
  s.whole_weeks = s.whole_days && iv.day % 7 == 0;
  bool months_only = iv.month > 0 && iv.day == 0 && iv.time == 0;
  bool days_only = iv.month == 0 && (iv.day > 0 || iv.time > 0) && iv.day >= 0 && iv.time >= 0;
  bool whole_days = iv.time == 0;
  if (!(months_only || days_only) || (type == DATEOID && days_only && !whole_days))
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("window_size \"{}\" is not a positive whole number of months, or of "
                         "days and smaller units",
                         text),
             {}, "Use, for example, '1 month', '3 months', '1 day' or '6 hours'.");
  if (months_only)
    s.months = iv.month;
  else
    s.interval = text;
  return s;
}

// The bounds of an integer type, as SQL literals: an integer window is cut
// at them. Empty for a time type.
std::pair<std::string, std::string> integer_ends(Oid type) {
  std::string type_min, type_max;
  if (type == INT2OID) type_min = "-32768", type_max = "32767";
  if (type == INT4OID) type_min = "-2147483648", type_max = "2147483647";
  if (type == INT8OID) type_min = "-9223372036854775808", type_max = "9223372036854775807";
  return {type_min, type_max};
}

// How the window holding v is found: its lower bound as SQL over v, $1 (the
// integer or the months) and $2 (the interval, as text).
struct Binning {
  std::string lower;
  int64 step = 0;
  std::string interval;
};

Binning binning(const attach::Parent& p, const WindowSize& size, const char* T) {
  Binning b;
  b.step = size.integer;
  b.interval = size.interval;
  if (is_integer(p.key.type)) {
    b.lower = fmt::format("pg_catalog.floor(v::pg_catalog.numeric / $1) * $1");
  } else if (size.months > 0) {
    b.step = size.months;
    b.lower = fmt::format(
        "'2000-01-01'::{0} + pg_catalog.make_interval(months => (pg_catalog.floor(("
        "(pg_catalog.date_part('year', v) - 2000) * 12 + pg_catalog.date_part('month', v) - 1) "
        "/ $1) * $1)::pg_catalog.int4)",
        T);
    b.interval = fmt::format("{} months", size.months);
  } else if (p.key.type == DATEOID || p.key.type == TIMESTAMPOID || size.whole_days) {
    // Days and weeks are calendar days and weeks of the session's TimeZone,
    // from midnight to midnight whatever the clock change between (a day of
    // 23 or 25 hours): binned in local time, on 2000-01-01, or for weeks on
    // Monday 2000-01-03, and cast back. For a timestamptz key, `lo + $2`
    // adds calendar days in that zone too. The CASE keeps the window on the
    // key where a zone's midnight is ambiguous (a clock set back at 00:00).
    const char* origin = size.whole_weeks ? "'2000-01-03'" : "'2000-01-01'";
    std::string local = fmt::format(
        "pg_catalog.date_bin($2::pg_catalog.interval, v::pg_catalog.timestamp, "
        "{}::pg_catalog.timestamp)",
        origin);
    b.lower = p.key.type == TIMESTAMPTZOID
                  ? fmt::format(
                        "(SELECT CASE WHEN b OPERATOR(pg_catalog.<=) v THEN b ELSE v END "
                        "FROM (SELECT ({})::pg_catalog.timestamptz AS b) day)",
                        local)
                  : local;
  } else {
    // Smaller units of a timestamptz key are lengths of time, binned from
    // midnight 2000-01-01 in the session's TimeZone.
    b.lower = fmt::format("pg_catalog.date_bin($2::pg_catalog.interval, v, '2000-01-01'::{})", T);
  }
  return b;
}

// The window holding DEFAULT's lowest key, aligned to window_size from
// 2000-01-01 (in the session's time zone) or from 0, and cut to the gap
// between attached partitions that holds that key. NULL and infinite keys
// have no window and stay in DEFAULT.
std::optional<std::pair<Datum, Datum>> oldest_window(const attach::Parent& p,
                                                     const WindowSize& size) {
  const char* T = type_sql(p.key.type);
  // An integer window is cut at the type's ends, so its bounds always cast;
  // the type's greatest value cannot be below any bound and has no window.
  auto [type_min, type_max] = integer_ends(p.key.type);
  std::string lowest =
      is_integer(p.key.type)
          ? fmt::format(
                "SELECT pg_catalog.min({0}) AS v FROM {1} WHERE {0} OPERATOR(pg_catalog.<) "
                "{2}::{3}",
                p.key.column, p.default_sql, type_max, T)
          : fmt::format("SELECT pg_catalog.min({0}) AS v FROM {1} WHERE pg_catalog.isfinite({0})",
                        p.key.column, p.default_sql);
  Binning b = binning(p, size, T);
  Oid types[] = {INT8OID, TEXTOID};
  Datum values[2] = {Int64GetDatum(b.step), 0};
  std::string upper = is_integer(p.key.type)
                          ? fmt::format("LEAST(lo + $1, {}::pg_catalog.numeric)", type_max)
                          : "lo + $2::pg_catalog.interval";
  values[1] = pg::guard([&] { return CStringGetTextDatum(b.interval.c_str()); });
  std::string first =
      is_integer(p.key.type) ? fmt::format("GREATEST(lo, {}::pg_catalog.numeric)", type_min) : "lo";
  std::string sql = fmt::format(
      "SELECT ({4})::{0}, ({1})::{0}, v FROM (SELECT v, {2} AS lo FROM ({3}) lowest "
      "WHERE v IS NOT NULL) w",
      T, upper, b.lower, lowest, first);
  if (pg::spi::execute(sql, SPI_OK_SELECT, {2, types, values, nullptr}) == 0) return std::nullopt;
  std::optional<Datum> lo = pg::spi::value(0, 1);
  std::optional<Datum> hi = pg::spi::value(0, 2);
  std::optional<Datum> lowest_key = pg::spi::value(0, 3);
  if (!lo || !hi || !lowest_key) return std::nullopt;
  // Aligned windows may not fit partitions made another way: the window
  // never reaches into one, it stops at its edge.
  Datum from = *lo;
  Datum to = *hi;
  partitions::clip_to_gap(p.relid, *lowest_key, from, to);
  return std::make_pair(from, to);  // by-value types: no memory to keep
}

struct Arguments {
  Oid relid = InvalidOid;
  std::string size_text;
  int64 batch_rows = 0;
  bool nonatomic = false;
};

Arguments arguments(FunctionCallInfo fcinfo) {
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
    pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED,
             "partheal_partition_data: parent and window_size must not be NULL");
  Arguments a;
  a.relid = PG_GETARG_OID(0);
  const char* size_text = pg::guard([&] { return text_to_cstring(PG_GETARG_TEXT_PP(1)); });
  a.size_text = size_text;
  a.batch_rows = PG_ARGISNULL(2) ? 50000 : PG_GETARG_INT32(2);
  if (a.batch_rows <= 0)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE, "batch_rows must be positive", {},
             "batch_rows is how many rows one move statement takes; the default is 50000.");
  a.nonatomic = fcinfo->context != nullptr && IsA(fcinfo->context, CallContext) &&
                !castNode(CallContext, fcinfo->context)->atomic;
  return a;
}

struct Drained {
  int64 windows = 0, rows = 0, statements = 0;
  std::string stopped;
};

// One window, the oldest: false when DEFAULT holds no window any more.
bool drain_one(Oid relid, const WindowSize& size, int64 batch_rows,
               std::optional<std::pair<Datum, Datum>>& previous, attach::Window& w,
               attach::Result& r) {
  return pg::with_own_sql({false}, [&] {
    attach::Parent p = attach::describe_parent(relid);
    std::optional<std::pair<Datum, Datum>> next;
    bool done = false;
    // As the owner: the look into DEFAULT, the windows' arithmetic and the
    // attach are the owner's business, whoever CALLs.
    pg::as_role(p.owner, [&] {
      if (OidIsValid(p.default_relid)) next = oldest_window(p, size);
      if (!next) {
        done = true;
        return;
      }
      if (previous && previous->first == next->first)
        pg::fail(ERRCODE_INTERNAL_ERROR, "partheal_partition_data made no progress on a window");
      previous = next;
      w = attach::window_from_values(p, next->first, next->second);
      r = attach::attach_window(p, w, std::nullopt, batch_rows);
    });
    return !done;
  });
}

// Window after window, each committed on its own when the CALL allows it,
// until DEFAULT holds none or one cannot be attached.
Drained drain(const Arguments& a, const WindowSize& size) {
  if (a.nonatomic)
    pg::spi::connect_nonatomic();
  else
    pg::spi::connect();
  Drained d;
  std::optional<std::pair<Datum, Datum>> previous;
  for (;;) {
    attach::Window w;
    attach::Result r;
    if (!drain_one(a.relid, size, a.batch_rows, previous, w, r)) break;
    if (r.outcome == attach::Outcome::kDefaultHoldsRows) {
      d.stopped = fmt::format("stopped at the window FROM ({}) TO ({}): {}", w.lower_literal,
                              w.upper_literal, r.reason);
      break;
    }
    d.windows++;
    d.rows += r.rows_moved;
    d.statements += r.move_statements;
    if (a.nonatomic) pg::spi::commit();
  }
  pg::spi::finish();
  return d;
}

}  // namespace

PARTHEAL_SQL_FUNCTION(partheal_partition_data) {
  Arguments a = arguments(fcinfo);
  attach::Parent first = attach::describe_parent(a.relid);
  const std::string name = first.name;
  if (type_sql(first.key.type) == nullptr)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("partheal_partition_data cannot drain \"{}\": its key is not an integer, "
                         "date, timestamp or timestamptz",
                         name),
             {}, "partheal_attach_window attaches a window of any key type, one at a time.");
  WindowSize size = parse_size(first.key.type, a.size_text);
  if (!a.nonatomic)
    pg::report(NOTICE, 0,
               "partheal_partition_data cannot commit here: every window moves in this one "
               "transaction",
               {{},
                "CALL it outside a transaction block, without a SET clause, to commit after "
                "each window."});

  TimestampTz started = pg::guard([] { return GetCurrentTimestamp(); });
  Drained d = drain(a, size);
  long ms =
      pg::guard([&] { return TimestampDifferenceMilliseconds(started, GetCurrentTimestamp()); });
  std::string summary = fmt::format(
      "partheal_partition_data: {} windows of \"{}\" attached, {} rows moved in {} batches{}",
      d.windows, name, d.rows, d.statements, d.stopped.empty() ? std::string() : "; " + d.stopped);
  std::string took = fmt::format("It took {}.{:03} s.", ms / 1000, ms % 1000);
  bool complete = d.stopped.empty();
  pg::report(complete ? NOTICE : WARNING, 0, summary,
             {took, complete ? ""
                             : "The rows of that window and later ones are still in DEFAULT, "
                               "where readers see them. CALL it again later."});
  PG_RETURN_VOID();
}
