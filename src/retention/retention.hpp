// Retention of managed tables registered with a retention, as a job of the
// worker's scheduler: a window whose real upper bound, read from the
// catalog, is at or before now() - retention in the table's zone (or, for
// an id-keyed table, at or below the position minus retention_ids) is
// detached and dropped, or kept as a plain table with
// retention_keep_table. Windows made by hand, wide or misaligned ones are
// judged by their bounds, so nothing that could hold a row newer than the
// horizon is touched.
//
// The DETACH takes the parent, the window and DEFAULT with the attach's
// lock discipline (retention/detach.hpp): polled, then queued within a small
// budget, and given up (and retried with back-off) when another
// transaction holds them. A window that foreign keys reference is left
// attached and said once. One window per table per round, oldest first;
// the worker polls again soon after one went. A table more than two
// windows behind has its due ones go up to 8 at a time, under one short
// hold of the parent, where they may (plain tables, nothing referencing
// them, not on Citus), and up to 8 such batches a round
// (retention/batches.hpp).
#pragma once

#include "worker/scheduler.hpp"

namespace partheal::retention {

// The job, registered with the scheduler at _PG_init.
worker::Job& retention_job();

}  // namespace partheal::retention
