// A heal's wait for a shard move. While a shard of a distributed table's
// colocation group moves, Citus refuses a partition's creation at once
// (it takes the group's lock without waiting, and gives no SQLSTATE of its
// own): the heal asks again once the group's lock is free, within its
// wait.
#pragma once

#include "pg/postgres.hpp"

extern "C" {
#include "datatype/timestamp.h"
}

namespace partheal::citus {

class ShardMoveWait {
 public:
  explicit ShardMoveWait(Oid relid) : relid_(relid) {}
  // Whether `message` is Citus's refusal during a shard move, and this
  // transaction may wait for the move: it has no XID and holds none of
  // Citus's advisory locks. A move waits for the shards' metadata locks
  // and, to copy, for transactions that wrote, where no deadlock check sees
  // the two; a transaction that holds either fails at once. Looked at
  // once, on the first refusal (the wait takes no lock).
  bool may_wait_after(const char* message);
  // Whether exactly one refusal has been seen: the wait is said once.
  bool first() const { return refusals_ == 1; }
  // Polls the group's lock (taken in SHARE, as a partition's creation
  // takes it, and let go at once), 100 ms doubling to 1 s across the
  // heal's waits, until it is free or `deadline` is near; whether it is
  // free.
  bool wait_until_free(TimestampTz deadline);

 private:
  Oid relid_;
  int refusals_ = 0;
  bool may_wait_ = false;
  long pause_ms_ = 100;
};

}  // namespace partheal::citus
