// The one routine that makes a partition exist: heal and create-ahead both
// end here, inside the worker's transaction.
#pragma once

#include <string>

#include "pg/postgres.hpp"

namespace partheal::heal {

struct Ensured {
  std::string partition;  // empty when a partition already covered the id
  std::string range;
};

// Under partheal's own advisory lock on (table, partition number), then
// SHARE UPDATE EXCLUSIVE on the parent, both within partheal.ddl_lock_timeout: if no partition
// covers id, creates one LIKE the parent, as the parent's owner, and ATTACHes it. Never PARTITION
// OF, which would lock the parent ACCESS EXCLUSIVE. Throws PgError.
Ensured ensure_covering(Oid relid, int64 id, int64 partition_size);

}  // namespace partheal::heal
