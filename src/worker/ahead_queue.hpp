// The create-ahead queue: a backend whose id reached a mark queues the next
// partition and returns at once; the worker tries each attempt, giving way
// to other sessions' locks, with a few retries. The queue is this module's
// part of shared memory.
#pragma once

#include "pg/postgres.hpp"

namespace partheal::worker {

// Queues the creation of partition number `partition` for the database's
// worker; false when the queue is full (the heal still covers it).
bool queue_create_ahead(Oid relid, int64 partition, int64 partition_size);

// The worker: tries the attempts that are due; returns how long until the
// next one is (or naptime if none waits). *served: one was tried.
long serve_create_ahead(Oid dboid, bool* served);

// How many attempts the database has queued; and dropping them, when the
// database goes.
int queued_attempts(Oid dboid);
void drop_queued_attempts(Oid dboid);

Size ahead_queue_shmem_size();
void init_ahead_queue(void* memory, bool found);

}  // namespace partheal::worker
