// The per-database worker's loop: it serves heal requests, runs the poll
// round at each naptime, and serves the create-ahead queue. What the poll
// round does (read the sequences, catch up) is create-ahead's policy, in
// ahead/catch_up; _PG_init hooks it in, so the worker sits below it.
#pragma once

#include <optional>
#include <vector>

#include "pg/error.hpp"
#include "pg/postgres.hpp"

extern "C" {
#include "datatype/timestamp.h"
}

namespace partheal::worker {

struct PollOutcome {
  std::optional<PgError> registrations;  // reading the registrations failed
  bool made_any = false;                 // partitions were made: poll again soon
  TimestampTz wake_at = 0;               // poll again at this time at the latest; 0: naptime
  std::vector<Oid> with_default;         // tables whose DEFAULT partition the worker drains
  std::vector<Oid> with_retention;       // tables registered with a retention
  // The registrations were read, so the round looked at the tables: what
  // partheal_workers().rounds counts (a round that found partheal_config
  // locked, or could not read it, looked at nothing).
  bool looked = false;
};
using PollRound = PollOutcome (*)(Oid dboid);

void set_poll_round(PollRound round);

}  // namespace partheal::worker
