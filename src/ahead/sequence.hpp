// Where a table's id sequence stands, read from sequence state alone: no
// table scan, no draw. The worker's poll and partheal_reserve use it.
#pragma once

#include "pg/postgres.hpp"

namespace partheal::ahead {

struct SequencePosition {
  bool drawn = false;  // false until the first nextval
  int64 last = 0;      // the last value drawn; before the first draw, start - increment
  int64 increment = 1;
};

// Checks SELECT or USAGE on the sequence, as pg_sequence_last_value does.
SequencePosition read_sequence(Oid sequence);

}  // namespace partheal::ahead
