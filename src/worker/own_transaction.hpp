// The worker's transactions: each partition it creates, and each poll, in
// a transaction of its own, committed at once, so that what it makes is
// visible to every session and survives the asker's rollback.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>

#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "worker/shared.hpp"

extern "C" {
#include "access/xact.h"
#include "pgstat.h"
#include "utils/snapmgr.h"
}

namespace partheal::worker {

inline void copy_text(char* dst, const std::string& src, size_t size) {
  strlcpy(dst, src.c_str(), size);
}

// Runs `ensure` (which ends in heal::ensure_covering) in a transaction of
// the worker's own, committed at once; a failure is logged as PHL03 and
// answered, never thrown. `for_what` ends the PHL03 line: "for id 25", or
// what the catch-up was doing when it does not know the id yet.
template <typename Ensure>
Answer in_own_transaction(Oid relid, const std::string& for_what, Ensure&& ensure) {
  Answer answer;
  try {
    pg::guard([] {
      SetCurrentStatementStartTimestamp();
      StartTransactionCommand();
      PushActiveSnapshot(GetTransactionSnapshot());
      pgstat_report_activity(STATE_RUNNING, "partheal: creating a partition");
    });
    heal::Ensured ensured = ensure();
    pg::guard([] {
      PopActiveSnapshot();
      CommitTransactionCommand();
      pgstat_report_activity(STATE_IDLE, nullptr);
    });
    copy_text(answer.partition, ensured.partition, sizeof(answer.partition));
    copy_text(answer.range, ensured.range, sizeof(answer.range));
    answer.gave_way = ensured.gave_way;
  } catch (const std::exception& caught) {
    // guard() flushed the error; aborting is what makes the worker reusable.
    pg::guard([] {
      AbortCurrentTransaction();
      pgstat_report_activity(STATE_IDLE, nullptr);
    });
    // Anything else (out of memory in C++) is answered as an internal
    // error, so that no asker is left waiting on a request marked running.
    auto* pg_error = dynamic_cast<const PgError*>(&caught);
    PgError other(ERRCODE_INTERNAL_ERROR, caught.what());
    const PgError& e = pg_error != nullptr ? *pg_error : other;
    const ErrorFields& f = e.fields();
    answer.sqlerrcode = f.sqlerrcode;
    copy_text(answer.message, f.message, sizeof(answer.message));
    copy_text(answer.detail, f.detail, sizeof(answer.detail));
    copy_text(answer.hint, f.hint, sizeof(answer.hint));
    std::string line =
        fmt::format("{} could not create the partition of {} {}: {}", errors::kLogCreateFailed,
                    pg::relation_label(relid), for_what, f.message);
    const char* text = line.c_str();
    int code = f.sqlerrcode;
    pg::guard([&] { ereport(LOG, (errcode(code), errmsg_internal("%s", text))); });
  }
  return answer;
}

// Runs f in a transaction of its own; a PgError is returned, not thrown.
template <typename F>
std::optional<PgError> in_transaction(F&& f) {
  try {
    pg::guard([] {
      SetCurrentStatementStartTimestamp();
      StartTransactionCommand();
      PushActiveSnapshot(GetTransactionSnapshot());
    });
    f();
    pg::guard([] {
      PopActiveSnapshot();
      CommitTransactionCommand();
    });
    return std::nullopt;
  } catch (const PgError& e) {
    pg::guard([] { AbortCurrentTransaction(); });
    return e;
  }
}

}  // namespace partheal::worker
