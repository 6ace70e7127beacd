// partheal's own SQL: run with search_path pinned to pg_catalog, pg_temp,
// inside an SPI connection, at a GUC nesting level of its own (with a
// lock_timeout when asked), all undone when the body returns.
//
// A function, not an object with a destructor: when the body throws, the
// (sub)transaction abort that must follow every PgError is what releases
// the SPI connection and the GUC level, and a destructor would run
// PostgreSQL code during the unwinding, where it could neither fail nor be
// needed.
#pragma once

#include <string>
#include <type_traits>

#include "pg/guc_level.hpp"
#include "pg/spi.hpp"

namespace partheal::pg {

struct OwnSql {
  bool spi = true;           // false: only the search_path (and lock_timeout)
  long lock_timeout_ms = 0;  // 0: the caller's lock_timeout
};

template <typename F>
auto with_own_sql(const OwnSql& how, F&& body) -> decltype(body()) {
  int level = enter_safe_search_path();
  if (how.lock_timeout_ms > 0) set_local("lock_timeout", std::to_string(how.lock_timeout_ms));
  if (how.spi) spi::connect();
  auto done = [&] {
    if (how.spi) spi::finish();
    leave_guc_level(level);
  };
  if constexpr (std::is_void_v<decltype(body())>) {
    body();
    done();
  } else {
    auto result = body();
    done();
    return result;
  }
}

}  // namespace partheal::pg
