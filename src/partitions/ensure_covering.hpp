// The one routine that makes a partition exist: heal and create-ahead both
// end here, inside the worker's transaction.
#pragma once

#include <string>

#include "partitions/key_space.hpp"
#include "pg/error.hpp"
#include "pg/postgres.hpp"

namespace partheal::partitions {

struct Ensured {
  std::string partition;  // empty when a partition already covered the id
  std::string range;
  bool gave_way = false;  // LockWait::kGiveWay found the parent locked: nothing done
  Range made;             // the bounds of `partition`, when one was made
};

// How the parent's SHARE UPDATE EXCLUSIVE lock is waited for. A heal, which
// an appender waits on, queues for it: the appender's wait is a lock wait
// too, so a cycle through the worker is PostgreSQL's deadlock detector's to
// resolve. Create-ahead and the catch-up, which nobody waits on, give way:
// a table another session holds or queues for is left for a later round,
// and nothing queues behind partheal.
enum class LockWait { kQueue, kGiveWay };

// Under partheal's own advisory lock on (table, partition number), then
// SHARE UPDATE EXCLUSIVE on the parent, both within partheal.ddl_lock_timeout: if no partition
// covers the key (an id, or a time as int64), creates the one `spec` cuts for it (clipped to the
// gap), LIKE the parent, as the parent's owner, and ATTACHes it. Never PARTITION OF, which would
// lock the parent ACCESS EXCLUSIVE. Throws PgError.
Ensured ensure_covering(Oid relid, int64 key, const KeySpec& spec,
                        LockWait wait = LockWait::kQueue);

// Logs a failed creation as PHL03: "... of <table> <for_what>: <message>".
// `for_what` is "for id 25", or what the catch-up was doing.
void log_creation_failure(Oid relid, const std::string& for_what, const PgError& e);

}  // namespace partheal::partitions
