// Heal requests: a backend asks its database's worker to create the
// partition covering one id, and waits for the answer. Both sides of a
// request slot are here; the slots are this module's part of shared memory.
// The worker commits the partition in its own transaction, so it survives
// the asker's rollback and the asker holds no DDL lock.
#pragma once

#include "partitions/ensure_covering.hpp"
#include "pg/postgres.hpp"

namespace partheal::worker {

// The asker. Blocks for at most partheal.heal_wait_timeout. Throws the
// worker's error unchanged (a lock timeout stays 55P03), or PH002/PH003.
// On Citus, while a shard move keeps the partition from being made, it
// asks again within that wait, if this transaction holds nothing a move
// waits for.
partitions::Ensured create_covering_partition(Oid relid, int64 key,
                                              const partitions::KeySpec& spec);
// The same, failing at once during a shard move: for a Citus worker node's
// heal, whose appender's locks there this backend cannot see.
partitions::Ensured create_covering_partition_at_once(Oid relid, int64 key,
                                                      const partitions::KeySpec& spec);

// The worker: serves every pending request of its database, each in a
// transaction of its own that holds the request's lock.
void serve_heal_requests(Oid dboid);

// True when a heal request of the database waits for the worker: what the
// worker polls for locks for gives way to it.
bool heal_requests_pending(Oid dboid);

// The same for this process's database, read without the requests' locks:
// safe in a signal handler (pg::CancelWhen), and at worst a tick late.
bool heal_request_waiting() noexcept;

// The worker, at exit (FATAL included): hands back the requests it had
// taken, so that the next worker serves them.
void hand_back_heal_requests(Oid dboid);

// This module's shared memory (worker/shmem.cpp lays out all of them).
Size heal_requests_shmem_size();
void init_heal_requests(void* memory, bool found);

}  // namespace partheal::worker
