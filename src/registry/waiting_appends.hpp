// Appenders that wait for a heal without the parent's lock
// (pg/own_lock.hpp), and retention, which must not take a partition that
// such an appender's rows are bound for: the appender draws its ids before
// it waits, and while it waits other appenders' commits move the horizon
// (the highest id the table holds) past them.
//
// Each side writes its bound before it reads the other's, a full barrier
// between (Dekker's order), so at least one of them sees the other:
//  - an appender publishes the lowest key of its call, then reads what
//    retention has announced for the table; if retention may take a
//    partition that reaches that key, it keeps its lock, and retention
//    waits for it as for any writer;
//  - retention announces the highest upper bound it may take, then reads
//    the published keys, and takes only partitions whose upper bound is at
//    or below the lowest of them.
// An appender's key stays published until it has its lock back.
#pragma once

#include <optional>

#include "pg/postgres.hpp"

namespace partheal::registry {

// The appender: publishes `lowest` for relid in this backend's slot. True
// when the lock may be let go. The slot stays published until
// clear_waiting() (or this backend's exit), whatever the answer.
bool publish_waiting(Oid relid, int64 lowest);
void clear_waiting();

// Retention, before it takes partitions of relid with upper bounds up to
// `upto`: announces that, then sets `lowest` to the lowest key an appender
// of this database has published for relid, if any. False when the
// announcement could not be stored (the table has no shared state): an
// appender could not see it, so retention takes nothing. end_retention()
// takes the announcement back once what it took has committed or failed.
bool announce_retention(Oid relid, int64 upto, std::optional<int64>& lowest);
void end_retention(Oid relid);

// This module's shared memory: a slot per backend.
void request_waiting_appends_memory();
void init_waiting_appends_memory();

}  // namespace partheal::registry
