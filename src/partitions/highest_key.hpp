// The highest key a parent's rows hold, as the caller's snapshot sees them:
// what an id-keyed table's retention counts its horizon from. Rows are what
// a table keeps; a sequence's position is what sessions drew (a CACHE hands
// a session a thousand ids at once, and a role with USAGE can draw without
// writing), so only rows may move the horizon.
#pragma once

#include <optional>
#include <string>

#include "pg/postgres.hpp"

namespace partheal::partitions {

struct HighestKey {
  bool known = false;        // false: a partition was locked, nothing is known
  std::optional<int64> key;  // none: the table holds no row
};

// Reads max(column) partition by partition from the highest range down,
// stopping at the first that holds a row (ranges do not overlap), then the
// DEFAULT partition above that. Each partition is locked (ACCESS SHARE)
// without waiting; one held by DDL makes the answer unknown. The caller
// holds a lock on the parent and has an SPI connection at partheal's
// search_path (pg::with_own_sql). With an index on the key, each step is a
// descent of that index; without one, a scan of one partition.
HighestKey highest_key(Oid parent, const std::string& column);

}  // namespace partheal::partitions
