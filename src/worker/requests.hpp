// Asking the database's partheal worker to create a partition, and waiting
// for its answer. The worker commits the partition in its own transaction,
// so it survives the asker's rollback and the asker holds no DDL lock.
#pragma once

#include <string>

#include "pg/postgres.hpp"

namespace partheal::worker {

struct Created {
  std::string partition;  // empty when the partition already existed
  std::string range;      // "FROM (20) TO (30)"
};

// Blocks for at most partheal.heal_wait_timeout. Throws the worker's error
// unchanged (a lock timeout stays 55P03), or PH002/PH003.
Created create_covering_partition(Oid relid, int64 id, int64 partition_size);

// Queues the creation of partition number `partition` for the worker and
// returns at once; false when the queue is full (the heal still covers it).
bool request_create_ahead(Oid relid, int64 partition, int64 partition_size);

// Shared memory: sized in shmem_request_hook, laid out in shmem_startup_hook.
void request_shared_memory();
void init_shared_memory();

}  // namespace partheal::worker
