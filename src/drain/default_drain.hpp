// The drain of managed time-keyed tables' DEFAULT partitions
// (partheal.drain_default), as a job of the worker's scheduler: rows that
// plain INSERTs sent to DEFAULT (back-dated, far-future, or before the
// window existed) move into the window that should hold them, without
// anyone calling partheal_partition_data.
//
// At each round, each such table takes one step (drain/window_step.hpp):
// the oldest window with rows in DEFAULT is cut as the heal cuts it (the
// registration's interval and zone, clipped to the gap between existing
// partitions, named as the heal names it), and attach_window
// (attach/reconcile.hpp) creates it, moves its rows out of DEFAULT and
// attaches it under a live writer. The same code as partheal_attach_window,
// with the same guarantees: no writer error, no row lost, bounded lock
// waits.
//
// One window per table per round, so one table's backlog cannot starve the
// others; the worker polls again soon after a window was attached. Only
// windows within premake of now's are made (whoever can put a row in
// DEFAULT chooses its key), and none with more than 100,000 rows there. A
// window attach_window gives up on (default_holds_rows), or whose attach
// fails, is backed off by the scheduler, and the windows after it are not
// held up behind it.
#pragma once

#include "worker/scheduler.hpp"

namespace partheal::drain {

// The job, registered with the scheduler at _PG_init.
worker::Job& default_drain_job();

}  // namespace partheal::drain
