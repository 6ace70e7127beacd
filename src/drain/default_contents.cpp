#include "drain/default_contents.hpp"

#include <fmt/format.h>

#include "errors.hpp"
#include "partitions/catalog.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
}

namespace partheal::drain {

Datum key_datum(Oid type, int64 key) {
  return type == DATEOID ? Int32GetDatum(static_cast<int32>(key)) : Int64GetDatum(key);
}

std::optional<int64> oldest_key(const attach::Parent& p, int64 from) {
  const partitions::RangeKey& k = p.key;
  std::string sql = fmt::format(
      "SELECT pg_catalog.min({0}) FROM {1} WHERE pg_catalog.isfinite({0}) AND {0}{2} {3} $1",
      k.column, p.default_sql, k.collate, k.ge_operator);
  Oid types[] = {k.type};
  Datum values[] = {key_datum(k.type, from)};
  pg::spi::execute(sql, SPI_OK_SELECT, {1, types, values, nullptr}, true);
  std::optional<Datum> v = pg::spi::value(0, 1);
  if (!v) return std::nullopt;
  return partitions::key_to_int64(*v, k.type);
}

int64 rows_below(const attach::Parent& p, int64 below, int64 cap) {
  const partitions::RangeKey& k = p.key;
  std::string sql = fmt::format(
      "SELECT pg_catalog.count(*) FROM (SELECT 1 FROM {1} WHERE pg_catalog.isfinite({0}) AND "
      "{0}{2} {3} $1 LIMIT {4}) s",
      k.column, p.default_sql, k.collate, k.lt_operator, cap + 1);
  Oid types[] = {k.type};
  Datum values[] = {key_datum(k.type, below)};
  pg::spi::execute(sql, SPI_OK_SELECT, {1, types, values, nullptr}, true);
  std::optional<Datum> n = pg::spi::value(0, 1);
  return n ? DatumGetInt64(*n) : 0;
}

int64 rows_in_window(const attach::Parent& p, Datum lower, Datum upper, int64 cap) {
  std::string sql =
      fmt::format("SELECT pg_catalog.count(*) FROM (SELECT 1 FROM {} WHERE {} LIMIT {}) s",
                  p.default_sql, attach::window_predicate(p), cap + 1);
  Oid types[] = {p.key.type, p.key.type};
  Datum values[] = {lower, upper};
  pg::spi::execute(sql, SPI_OK_SELECT, {2, types, values, nullptr}, true);
  std::optional<Datum> n = pg::spi::value(0, 1);
  return n ? DatumGetInt64(*n) : 0;
}

void report_expired(Oid relid, int64 expired, int64 cap, bool past_horizon,
                    const std::string& horizon_key) {
  pg::report(
      LOG, 0,
      fmt::format(
          "{} the DEFAULT partition of {} holds {}{} {} older than {}, which "
          "starts at {}: partheal makes no window for them and never drops them",
          errors::kLogExpiredInDefault, pg::relation_label(relid),
          expired > cap ? "more than " : "", Min(expired, cap), expired == 1 ? "row" : "rows",
          past_horizon ? "the retention horizon's window" : "the oldest window the drain makes",
          horizon_key),
      {past_horizon ? "A window made for them would be past the horizon, and retention would drop "
                      "it with their rows at once."
                    : "The drain makes windows back to the registration's drain_reach before now "
                      "(30 days unless given; 1,000 windows at most), so that whoever may write "
                      "into DEFAULT cannot make the owner's worker grow the catalog without bound.",
       past_horizon ? "DELETE them from the DEFAULT partition when they may go. "
                      "partheal_stats.default_expired_rows counts them."
                    : "Move them with CALL partheal_partition_data(...), or DELETE "
                      "them. partheal_stats.default_expired_rows counts them."});
}

}  // namespace partheal::drain
