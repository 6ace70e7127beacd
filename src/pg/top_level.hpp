// Running one statement as a client's top-level command, not through SPI:
// for the commands PostgreSQL refuses inside a function or a transaction
// block, which commit and start transactions of their own (ALTER TABLE ...
// DETACH PARTITION ... CONCURRENTLY).
#pragma once

#include <string>

#include "pg/postgres.hpp"

extern "C" {
#include "datatype/timestamp.h"
}

namespace partheal::pg {

// Runs `sql`, one utility statement, as exec_simple_query would: parsed,
// wrapped as a utility PlannedStmt, and run by ProcessUtility at top level.
// Needs a transaction just begun (not a block, no subtransaction, no SPI
// connection) with one active snapshot pushed, which the command may pop
// and commit; returns in a transaction (perhaps a later one) that the
// caller commits, with one active snapshot pushed (a new one after an
// inner commit), so that SPI may run in it and the caller's commit pops it.
//
// lock_timeout_ms bounds every lock wait of the command, in each of its
// transactions: it is set on the process's lock_timeout for the call, not
// with SET, which the command's own commit or abort would keep or undo.
// budget_ms bounds the whole command (statement_timeout's timer, 57014): a
// wait for several transactions in turn is several lock waits.
//
// Returns when the first transaction that committed during the call did
// (0 for none): the locks taken before the call were held until then.
TimestampTz run_top_level(const std::string& sql, long lock_timeout_ms, long budget_ms);

}  // namespace partheal::pg
