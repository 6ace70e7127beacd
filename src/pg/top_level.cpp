#include "pg/top_level.hpp"

#include "pg/boundary.hpp"

extern "C" {
#include "access/xact.h"
#include "nodes/plannodes.h"
#include "parser/parser.h"
#include "storage/proc.h"
#include "tcop/dest.h"
#include "tcop/utility.h"
#include "utils/memutils.h"
#include "miscadmin.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

namespace partheal::pg {

namespace {

// What the call changes in the process, put back on every way out. Plain
// assignments: nothing here can fail or needs PostgreSQL. The caller's
// memory context may have gone with a transaction the command committed:
// it goes on in the transaction open now.
// When the first transaction committed during a call, noted by a
// transaction callback that only reads the clock.
bool watching = false;
TimestampTz first_commit = 0;

void on_xact(XactEvent event, void*) noexcept {
  if (watching && event == XACT_EVENT_COMMIT && first_commit == 0)
    first_commit = GetCurrentTimestamp();
}

struct Restore {
  MemoryContext portal_context = PortalContext;
  int lock_timeout = LockTimeout;
  bool deadline = false;
  ~Restore() {
    watching = false;
    // The deadline off, and a cancel it raised too late to stop the
    // command dropped, so that it cannot stop the worker's next work.
    if (deadline) {
      disable_timeout(STATEMENT_TIMEOUT, false);
      if (get_timeout_indicator(STATEMENT_TIMEOUT, true)) QueryCancelPending = false;
    }
    PortalContext = portal_context;
    LockTimeout = lock_timeout;
    CurrentMemoryContext =
        TopTransactionContext != nullptr ? TopTransactionContext : TopMemoryContext;
  }
};

// The command's memory, as a client's portal's would be, outside every
// transaction: its parse tree, and what it keeps across its own commit
// (DETACH CONCURRENTLY's work queue in CurrentMemoryContext, names in
// PortalContext). The guard is entered in it too, so that an error after
// that commit is copied into memory that is still there. Emptied at each
// call.
MemoryContext command_context() {
  static MemoryContext cxt = nullptr;
  if (cxt == nullptr)
    cxt = guard([] {
      return AllocSetContextCreate(TopMemoryContext, "partheal top-level command",
                                   ALLOCSET_SMALL_SIZES);
    });
  return cxt;
}

}  // namespace

TimestampTz run_top_level(const std::string& sql, long lock_timeout_ms, long budget_ms) {
  static bool registered = false;
  if (!registered) {
    guard([] { RegisterXactCallback(on_xact, nullptr); });
    registered = true;
  }
  MemoryContext cxt = command_context();
  Restore restore;
  const char* text = sql.c_str();
  const int timeout = static_cast<int>(Max(1L, Min(lock_timeout_ms, long{INT_MAX})));
  const int budget = static_cast<int>(Max(1L, Min(budget_ms, long{INT_MAX})));
  guard([&] { MemoryContextReset(cxt); });
  CurrentMemoryContext = cxt;
  first_commit = 0;
  watching = true;
  guard([&] {
    char* query = pstrdup(text);
    RawStmt* raw = linitial_node(RawStmt, raw_parser(query, RAW_PARSE_DEFAULT));
    PlannedStmt* stmt = makeNode(PlannedStmt);
    stmt->commandType = CMD_UTILITY;
    stmt->canSetTag = true;
    stmt->utilityStmt = raw->stmt;
    stmt->stmt_location = raw->stmt_location;
    stmt->stmt_len = raw->stmt_len;
    PortalContext = cxt;
    LockTimeout = timeout;
    // Each lock wait is bounded by lock_timeout, the whole command by the
    // budget: its second transaction waits for each older transaction in
    // turn, one lock wait each.
    enable_timeout_after(STATEMENT_TIMEOUT, budget);
    restore.deadline = true;
    QueryCompletion qc;
    InitializeQueryCompletion(&qc);
    ProcessUtility(stmt, query, false, PROCESS_UTILITY_TOPLEVEL, nullptr, nullptr, None_Receiver,
                   &qc);
    // A command that committed inside popped the snapshot it was given:
    // the transaction it leaves open gets one, as the caller's began with.
    if (!ActiveSnapshotSet()) PushActiveSnapshot(GetTransactionSnapshot());
  });
  return first_commit;
}

}  // namespace partheal::pg
