// partheal_unmanage's forgetting of a table's shared state (its stats and
// watermark), held until its transaction commits: a ROLLBACK keeps the
// registration, so it keeps the state too (forget_at_commit.cpp).
#pragma once

#include "pg/postgres.hpp"

namespace partheal::manage {

// Forgets the table's shared state when this transaction commits; a
// rolled-back savepoint takes it back.
void forget_at_commit(Oid relid);

// Registered again in the same transaction: its state stays.
void cancel_forget(Oid relid);

// A state whose table is no longer registered (a race with the worker's
// poll during partheal_unmanage can leave one) is forgotten, so the space
// goes back to tables that are.
void forget_unregistered();

}  // namespace partheal::manage
