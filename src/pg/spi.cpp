#include <fmt/format.h>

#include "pg/spi.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "utils/builtins.h"
}

namespace partheal::pg {

std::string quoted(const std::string& name) {
  const char* text = name.c_str();
  return guarded_text([&] { return quote_identifier(text); });
}

}  // namespace partheal::pg

namespace partheal::pg::spi {

namespace {

void check(int rc, int expected_rc, const std::string& what) {
  if (rc == expected_rc) return;
  fail(ERRCODE_INTERNAL_ERROR, fmt::format("partheal: SPI failed: {}", what),
       fmt::format("SPI returned {} where {} was expected.", SPI_result_code_string(rc),
                   SPI_result_code_string(expected_rc)));
}

}  // namespace

void connect() {
  check(guard([] { return SPI_connect(); }), SPI_OK_CONNECT, "connect");
}

void connect_nonatomic() {
  check(guard([] { return SPI_connect_ext(SPI_OPT_NONATOMIC); }), SPI_OK_CONNECT, "connect");
}

void commit() {
  guard([] { SPI_commit(); });
}

void finish() {
  check(guard([] { return SPI_finish(); }), SPI_OK_FINISH, "finish");
}

uint64 execute(const std::string& sql, int expected_rc, const Args& args, bool read_only) {
  const char* text = sql.c_str();
  int rc = guard([&] {
    return SPI_execute_with_args(text, args.count, args.types, args.values, args.nulls, read_only,
                                 0);
  });
  check(rc, expected_rc, sql);
  return SPI_processed;
}

SPIPlanPtr prepare_kept(const std::string& sql, int nargs, Oid* types) {
  const char* text = sql.c_str();
  SPIPlanPtr plan = guard([&] {
    SPIPlanPtr p = SPI_prepare(text, nargs, types);
    if (p != nullptr) SPI_keepplan(p);
    return p;
  });
  if (plan == nullptr) check(SPI_result, SPI_OK_SELECT, sql);
  return plan;
}

uint64 execute_plan(SPIPlanPtr plan, Datum* values, const char* nulls, int expected_rc) {
  int rc = guard([&] { return SPI_execute_plan(plan, values, nulls, false, 0); });
  check(rc, expected_rc, "a prepared statement");
  return SPI_processed;
}

std::optional<Datum> value(uint64 row, int col) {
  bool isnull = true;
  Datum d = guard(
      [&] { return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull); });
  if (isnull) return std::nullopt;
  return d;
}

}  // namespace partheal::pg::spi
