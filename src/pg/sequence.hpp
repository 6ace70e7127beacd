// Where a table's id sequence stands, read without drawing from it: no
// table scan, no SQL. The worker's poll and partheal_reserve use it.
#pragma once

#include <optional>

#include "pg/postgres.hpp"

namespace partheal::pg {

struct SequencePosition {
  bool drawn = false;  // false until the first nextval, or after RESTART
  int64 next = 0;      // the value the next nextval returns
  int64 last = 0;      // one step before next: the position
  int64 increment = 1;
  int64 cache = 1;
  int64 max_value = PG_INT64_MAX;  // MAXVALUE: no nextval returns more
};

// With wait false, nullopt when another transaction holds a lock on the
// sequence that would make the read wait (ALTER SEQUENCE in progress). The
// read needs SELECT or USAGE on the sequence, as pg_sequence_last_value
// does; it reads the sequence's tuple itself, so its lock goes with the
// current (sub)transaction.
std::optional<SequencePosition> read_sequence(Oid sequence, bool wait);

}  // namespace partheal::pg
