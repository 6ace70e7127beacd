// Serving what backends ask of the worker: heal requests, each in a
// transaction that holds the request's lock, and the queued create-ahead
// attempts, which give way to other sessions' locks.
#pragma once

#include "pg/postgres.hpp"

namespace partheal::worker {

// Serves every pending heal request of the database.
void serve_pending(Oid dboid);

// Serves the create-ahead attempts that are due; returns how long until the
// next one is (or naptime if none waits). *served: one was tried.
long serve_ahead(Oid dboid, bool* served);

}  // namespace partheal::worker
