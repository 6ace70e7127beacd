// The worker's poll of the sequences, for writers that never call
// partheal_append, and the catch-up that creates what their positions need.
#pragma once

#include <optional>
#include <vector>

#include "partitions/key_space.hpp"
#include "pg/error.hpp"
#include "pg/postgres.hpp"
#include "worker/worker.hpp"

namespace partheal::ahead {

// A table whose draws need a partition that is missing, as a poll saw it.
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
  // poll read them (a round trip to each node, so not read again).
  std::vector<std::vector<int64>> other_nodes_ids;  // one list per node
};

struct Poll {
  std::vector<Watched> behind;           // the tables to catch up
  std::optional<PgError> registrations;  // reading the registrations failed
  int64 wake_at = 0;                     // a clock's next change (TimestampTz); 0: none
  std::vector<Oid> with_default;         // tables whose DEFAULT the worker drains, left out
  std::vector<Oid> with_retention;       // tables registered with a retention
  bool looked = false;                   // the registrations were read (not locked, not failed)
};

// Reads every registered table's sequence: all in one transaction per 50 ms
// slice, each table in a subtransaction that is rolled back at once; heal
// requests are served between slices. One table whose poll fails is logged
// once and neither stops nor delays the others.
Poll poll_sequences(Oid dboid);

// Creates what the positions need; true when anything was made.
bool catch_up(Oid dboid, const std::vector<Watched>& behind);

// The worker's poll round (worker::set_poll_round): the poll, then the
// catch-up of what it found behind.
worker::PollOutcome poll_and_catch_up(Oid dboid);

}  // namespace partheal::ahead
