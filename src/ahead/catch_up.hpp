// Create-ahead's job in the worker's scheduler: at each round's look, a
// table whose position (its sequence's, or the clock's) needs a partition
// that is missing is due; each step makes the first one missing.
#pragma once

#include <string>
#include <vector>

#include "ahead/headroom.hpp"
#include "ahead/node_ranges.hpp"
#include "partitions/key_space.hpp"
#include "pg/postgres.hpp"
#include "worker/scheduler.hpp"

extern "C" {
#include "datatype/timestamp.h"
}

namespace partheal::ahead {

// A table whose draws need a partition that is missing, as a look saw it.
struct Watched {
  Oid relid;
  Oid sequence;
  int64 size;
  int mark_percent;
  int64 key_max;
  int headroom;
  // A time-keyed table is caught up with the clock, not a sequence.
  bool by_clock = false;
  int premake = 0;
  partitions::KeySpec spec;
  // On the Citus coordinator: what the other nodes' positions need, as the
  // look read them (a round trip to each node, so not read again).
  std::vector<std::vector<int64>> other_nodes_ids;  // one list per node
};

// What create-ahead remembers of a table between rounds (the scheduler's
// memo of it).
struct TableWatch : worker::Memo {
  Traffic traffic;
  NodeWatch nodes;                     // on the Citus coordinator: the worker nodes' positions
  Watched behind;                      // what the last look found missing
  std::string last_error;              // a look's error is logged when it changes
  Oid default_partition = InvalidOid;  // logged once, while attached
  bool default_drained = false;        // and whether the drain was on then
  TimestampTz busy_since = 0;          // the catch-up giving way since; 0: not
  bool busy_said = false;              // and said so
};

// The job, registered with the scheduler at _PG_init.
worker::Job& catch_up_job();

}  // namespace partheal::ahead
