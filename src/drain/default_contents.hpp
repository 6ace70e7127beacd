// What the worker's drain reads from a DEFAULT partition, each a query
// as the table's owner under ACCESS SHARE, which no writer waits for; and
// what it says of the rows it leaves there.
#pragma once

#include <optional>
#include <string>

#include "attach/window.hpp"
#include "pg/postgres.hpp"

namespace partheal::drain {

// A key of the table's type as a Datum (int64 keys; a date's days).
Datum key_datum(Oid type, int64 key);

// DEFAULT's lowest finite key at or above `from`, if it holds one: min() is
// an index probe when DEFAULT has an index on the key (a partitioned index
// on the parent gives it one), and otherwise a scan. NULL and infinite keys
// have no window.
std::optional<int64> oldest_key(const attach::Parent& p, int64 from);

// The rows of DEFAULT with a finite key below `below`, counted up to
// cap + 1.
int64 rows_below(const attach::Parent& p, int64 below, int64 cap);

// DEFAULT's rows of [lower, upper), counted up to cap + 1: a window with
// more is left to partheal_partition_data, since the worker serves no heal
// request while one window's transaction runs.
int64 rows_in_window(const attach::Parent& p, Datum lower, Datum upper, int64 cap);

// PHL11: DEFAULT holds `expired` rows (more than `cap`: at least) older
// than the oldest window the drain makes, which starts at `horizon_key`.
void report_expired(Oid relid, int64 expired, int64 cap, bool past_horizon,
                    const std::string& horizon_key);

}  // namespace partheal::drain
