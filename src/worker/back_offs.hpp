// The scheduler's back-offs, per (database, job, table, window), in shared
// memory: a step that failed is tried again after 1 s, doubling to a
// minute, and a table that a round leaves out (its DEFAULT detached for a
// while, its retention turned off and on) keeps its back-off until its
// registration goes. partheal_workers().backing_off counts them.
#pragma once

#include <optional>
#include <vector>

#include "pg/postgres.hpp"

extern "C" {
#include "datatype/timestamp.h"
}

namespace partheal::worker::back_offs {

constexpr long kFirstMs = 1000;
constexpr long kCapMs = 60000;

// A window of a table, as a job names it (a key, a partition's OID), or
// none: the whole table.
using Window = std::optional<int64>;

// Whether the step waits: its retry time is still ahead.
bool waiting(Oid dboid, int job, Oid relid, const Window& window, TimestampTz now);

// After a failure: the next try in 1 s, then doubling to kCapMs. Or at
// once to `fixed_ms` (a window too big, a window referenced).
void back_off(Oid dboid, int job, Oid relid, const Window& window, long fixed_ms = 0);

// After a success: the next try is not held back.
void clear(Oid dboid, int job, Oid relid, const Window& window);

// The windows of a job's table that `keep` does not name go (retired,
// dropped by hand).
void keep_windows(Oid dboid, int job, Oid relid, const std::vector<int64>& keep);

// Every back-off of the database whose table is not in `registered`; all
// of them when `registered` is null (the database lost partheal).
void forget_all_but(Oid dboid, const std::vector<Oid>* registered);

// How many of the database's steps wait now.
int waiting_count(Oid dboid);

// Shared memory (worker/shmem.cpp).
void request_shared_memory();
void init_shared_memory();

}  // namespace partheal::worker::back_offs
