// The worker's drain of managed time-keyed tables' DEFAULT partitions
// (partheal.drain_default): rows that plain INSERTs sent to DEFAULT
// (back-dated, far-future, or before the window existed) move into the
// window that should hold them, without anyone calling
// partheal_partition_data.
//
// At each poll, for each such table, the oldest window with rows in DEFAULT
// is cut as the heal cuts it (the registration's interval and zone, clipped
// to the gap between existing partitions, named as the heal names it), and
// attach_window (attach/reconcile.hpp) creates it, moves its rows out of
// DEFAULT and attaches it under a live writer, in a transaction of the
// worker's own. The same code as partheal_attach_window, with the same
// guarantees: no writer error, no row lost, bounded lock waits.
//
// One window per table per poll, so one table's backlog cannot starve the
// others; the worker polls again soon after a window was attached. Only
// windows within premake of now's are made (whoever can put a row in
// DEFAULT chooses its key), and none with more than 100,000 rows there. A
// window attach_window gives up on (default_holds_rows), or whose attach
// fails, is retried with back-off, and the windows after it are not held up
// behind it.
#pragma once

#include <vector>

#include "pg/postgres.hpp"

namespace partheal::drain {

// Serves heal requests between tables. True when a window was attached.
bool drain_managed_defaults(Oid dboid, const std::vector<Oid>& tables);

}  // namespace partheal::drain
