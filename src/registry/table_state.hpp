// Per managed table, in shared memory and so cluster-wide: the create-ahead
// watermark and the counters behind partheal_stats.
#pragma once

#include <optional>
#include <vector>

#include "partitions/key_space.hpp"

#include "pg/postgres.hpp"

extern "C" {
#include "port/atomics.h"
}

namespace partheal::registry {

struct TableKey {
  Oid dboid;
  Oid relid;
};

struct TableState {
  TableKey key;  // the hash key; must stay first
  // The highest partition number for which a creation was attempted, stored
  // as int64 bits. Appends move it up, by compare-and-swap; it is reset when
  // the partition size changes, and the worker's poll pulls it down to the
  // partitions the sequence position needs when it is far above them (a
  // sequence moved back), so that it follows the ids in use.
  pg_atomic_uint64 watermark;
  pg_atomic_uint64 partition_size;
  pg_atomic_uint32 mark_percent;
  pg_atomic_uint64 appends;
  pg_atomic_uint64 rows;
  pg_atomic_uint64 heals;         // by partheal_append and partheal_reserve
  pg_atomic_uint64 insert_heals;  // by plain INSERTs, through the insert gate
  pg_atomic_uint64 exhaustions;
  pg_atomic_uint64 ahead_requested;
  pg_atomic_uint64 ahead_created;
  pg_atomic_uint64 ahead_failed;
  pg_atomic_uint64 last_heal;           // TimestampTz; 0: never
  pg_atomic_uint64 key_max;             // the key type's largest value, as int64 bits
  pg_atomic_uint32 headroom;            // partitions the worker keeps ahead now; 0: not polled yet
  pg_atomic_uint64 queue_full_said_at;  // TimestampTz of the last PHL05 "queue full"; 0: never
  pg_atomic_uint64 queue_full_dropped;  // attempts dropped since
  // What the worker will create next, as its last poll saw it
  // (partheal_stats.next_from, next_to, next_reason): int64 bits.
  pg_atomic_uint64 next_from;
  pg_atomic_uint64 next_to;
  pg_atomic_uint64 next_at;      // the id whose draw makes it needed
  pg_atomic_uint32 next_reason;  // NextReason
  // A time-keyed table's newest partition's upper bound, as the worker's
  // last poll saw it: kind 0 none, 1 a value, 2 MAXVALUE.
  pg_atomic_uint64 newest_upper;
  pg_atomic_uint32 newest_upper_kind;
  pg_atomic_uint32 key_format;  // KeyFormat of a time key, for partheal_stats to show bounds
  // The worker's drain of DEFAULT: rows moved and windows attached, counted
  // when their transaction has committed.
  pg_atomic_uint64 drained_rows;
  pg_atomic_uint64 drained_windows;
  // Retention: windows detached and dropped, and detached and kept.
  pg_atomic_uint64 dropped_windows;
  pg_atomic_uint64 detached_windows;
  // The rows the drain's last count (a minute apart) found in DEFAULT
  // older than the retention horizon's window, plus one: 0 is never
  // counted (partheal_stats.default_expired_rows NULL).
  pg_atomic_uint64 expired_in_default;
  // How far the worker's wall clock (its TimeZone: the server's setting, or
  // the database's) was ahead of UTC at its last poll, in microseconds;
  // kNothingAttempted before it. A timestamp or date key's now() as the
  // owner's worker reads it, for the band of a non-owner's heal, which its
  // session's TimeZone must not move.
  pg_atomic_uint64 worker_clock_offset;
  // The transaction of the partheal_manage that made the state, while it
  // may still be running: a poll that reads the registrations before it
  // commits must not forget the state (InvalidTransactionId: none).
  pg_atomic_uint32 registering_xid;
};

// How partheal_stats writes a time-keyed table's bounds: as its key type.
enum class KeyFormat : uint32 { kIds = 0, kTimestamp = 1, kTimestamptz = 2, kDate = 3 };

enum class NextReason : uint32 {
  kNotPolled = 0,   // the worker has not polled the table since it started
  kMissing = 1,     // needed now: the worker is creating it
  kAtMark = 2,      // made when ids reach next_at, the mark
  kAtNextDraw = 3,  // made at the next draw, next_at (an increment larger than a partition)
  kOff = 4,         // create-ahead is off for the table
  kDefault = 5,     // a DEFAULT partition is attached: none is made
  kNone = 6,        // nothing: the key type ends before another partition
  kAtTime = 7,      // a time-keyed table's: made when the clock reaches next_at
};

// Publishes what the worker will create next for relid.
void set_next(Oid relid, NextReason reason, int64 from = 0, int64 to = 0, int64 at = 0);

// Publishes a time-keyed table's newest upper bound (nullopt: no partition).
void set_newest_upper(Oid relid, const std::optional<partitions::Bound>& upper, KeyFormat format);

// The worker's wall clock offset (see TableState::worker_clock_offset):
// set at each poll, read by a non-owner's heal; nullopt before the first.
void set_worker_clock_offset(Oid relid, int64 offset);
std::optional<int64> worker_clock_offset(Oid relid);

constexpr int64 kNothingAttempted = PG_INT64_MIN;

// Runs f on this database's state of relid under the table lock, so that no
// entry can be removed (partheal_unmanage) while f uses it; f touches atomics
// only and must not throw. False if relid has no state.
bool with_state(Oid relid, void (*f)(TableState&, void*) noexcept, void* ctx);
template <typename F>
bool with_state(Oid relid, F&& f) {
  return with_state(
      relid, [](TableState& s, void* c) noexcept { (*static_cast<F*>(c))(s); }, &f);
}

// Finds or adds relid's state, keeping its size and mark current. False when
// all partheal.max_tables entries are taken.
bool track(Oid relid, int64 partition_size, int mark_percent, int64 key_max);
void forget(Oid relid);
// Marks relid's state as made by the current transaction (partheal_manage),
// so that forget_all_but spares it until the transaction ends.
void mark_registering(Oid relid);
// Forgets this database's states whose table is not in `registered`.
void forget_all_but(const std::vector<Oid>& registered);
// Forgets every state of a database (dropped, or its extension dropped),
// from any process; counts them without forgetting with `count_only`.
int forget_database(Oid dboid, bool count_only = false);
// The databases that have any state now.
std::vector<Oid> databases_with_state();

int64 watermark(TableState* state);
// Lowers the watermark to `ceiling` if it is above.
void pull_watermark_down(TableState* state, int64 ceiling);
// Raises the watermark to partition if it is below: true for the one caller
// in the whole cluster that raised it, which then owns the attempt.
bool claim(TableState* state, int64 partition);

inline void count(pg_atomic_uint64& counter, uint64 n = 1) {
  pg_atomic_fetch_add_u64(&counter, n);
}

// How many states there are now, in all databases.
long tracked();

// Calls f for every state of this database, under a shared lock; f must not
// throw.
void for_each_in_database(void (*f)(TableState*, void*) noexcept, void* ctx);

void request_shared_memory();
void init_shared_memory();

}  // namespace partheal::registry
