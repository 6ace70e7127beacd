// The worker's transactions. Each partition it creates, and each slice of a
// poll, runs in a transaction of its own, committed at once, so that what it
// makes is visible to every session and survives the asker's rollback. An
// error aborts the transaction and comes back as a value: the worker's loop
// never unwinds past one.
#pragma once

#include <optional>
#include <string>

#include "partitions/ensure_covering.hpp"
#include "pg/error.hpp"
#include "pg/postgres.hpp"

namespace partheal::worker {

namespace detail {
void begin(const char* activity);
void commit(bool report_idle);
void abort(bool report_idle);
}  // namespace detail

// Runs f in a transaction of its own. `activity`, when given, is what
// pg_stat_activity shows meanwhile. A PgError aborts the transaction and is
// returned; any other exception (out of memory in C++) is the caller's,
// with the transaction still open for its abort.
template <typename F>
std::optional<PgError> in_transaction(F&& f, const char* activity = nullptr) {
  try {
    detail::begin(activity);
    f();
    detail::commit(activity != nullptr);
    return std::nullopt;
  } catch (const PgError& e) {
    detail::abort(activity != nullptr);
    return e;
  }
}

// One creation by the worker: what partitions::ensure_covering made, or the
// error that stopped it.
struct Creation {
  partitions::Ensured made;
  std::optional<PgError> error;
};

// Runs `ensure` (which ends in partitions::ensure_covering) in a transaction
// of its own; a failure is logged as PHL03 and returned, never thrown.
// `for_what` ends the PHL03 line: "for id 25", or what the catch-up was doing.
// Any other exception is answered as an internal error too, so that no
// asker is left waiting on a request marked running.
template <typename Ensure>
Creation create_in_transaction(Oid relid, const std::string& for_what, Ensure&& ensure) {
  Creation out;
  try {
    out.error = in_transaction([&] { out.made = ensure(); }, "partheal: creating a partition");
  } catch (const std::exception& caught) {
    detail::abort(true);
    out.error = PgError(ERRCODE_INTERNAL_ERROR, caught.what());
  }
  if (out.error) {
    out.made = {};
    partitions::log_creation_failure(relid, for_what, *out.error);
  }
  return out;
}

}  // namespace partheal::worker
