#include "worker/transaction.hpp"

#include <fmt/format.h>

#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"

extern "C" {
#include "access/xact.h"
#include "pgstat.h"
#include "utils/snapmgr.h"
}

namespace partheal::worker {

namespace detail {

void begin(const char* activity) {
  pg::guard([&] {
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    PushActiveSnapshot(GetTransactionSnapshot());
    if (activity != nullptr) pgstat_report_activity(STATE_RUNNING, activity);
  });
}

void commit(bool report_idle) {
  pg::guard([&] {
    // A command run at top level (pg::run_top_level) may have committed
    // the snapshot begin() pushed along with its first transaction.
    if (ActiveSnapshotSet()) PopActiveSnapshot();
    CommitTransactionCommand();
    if (report_idle) pgstat_report_activity(STATE_IDLE, nullptr);
  });
}

void abort(bool report_idle) {
  // guard() flushed the error; aborting is what makes the worker reusable.
  pg::guard([&] {
    AbortCurrentTransaction();
    if (report_idle) pgstat_report_activity(STATE_IDLE, nullptr);
  });
}

}  // namespace detail

}  // namespace partheal::worker
