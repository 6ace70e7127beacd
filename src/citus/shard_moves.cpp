#include "citus/shard_moves.hpp"

#include "pg/citus.hpp"
#include "pg/pause.hpp"

extern "C" {
#include "utils/timestamp.h"
}

namespace partheal::citus {

bool ShardMoveWait::may_wait_after(const char* message) {
  if (!pg::citus::refused_during_shard_move(message)) return false;
  if (refusals_++ == 0) may_wait_ = pg::citus::may_wait_for_shard_move();
  return may_wait_;
}

bool ShardMoveWait::wait_until_free(TimestampTz deadline) {
  // A wait after a refused re-ask starts at twice the pause the last one
  // ended with.
  if (refusals_ > 1) pause_ms_ = Min(pause_ms_ * 2, 1000L);
  bool free = false;
  while (!free && TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline) > pause_ms_) {
    pg::pause_ms(pause_ms_);
    pause_ms_ = Min(pause_ms_ * 2, 1000L);
    free = pg::citus::colocation_free(relid_);
  }
  return free;
}

}  // namespace partheal::citus
