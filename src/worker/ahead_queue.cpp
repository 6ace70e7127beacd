#include "worker/ahead_queue.hpp"

#include <fmt/format.h>

#include <cstring>
#include <string>

#include "errors.hpp"
#include "partitions/ensure_covering.hpp"
#include "partitions/key_space.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "registry/table_state.hpp"
#include "settings.hpp"
#include "worker/databases.hpp"
#include "worker/transaction.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
}

namespace partheal::worker {

namespace {

// A create-ahead attempt waiting for the worker, with its retry state.
struct AheadSlot {
  bool used;
  Oid dboid;
  Oid relid;
  int64 partition;
  int64 partition_size;  // what `partition` was numbered under: a new size drops the slot
  int attempts;
  TimestampTz not_before;
  TimestampTz busy_since;  // giving way to other sessions' locks since; 0: not
};

constexpr int kAheadSlots = 256;

struct Queue {
  slock_t mutex;
  AheadSlot slots[kAheadSlots];
};

Queue* queue = nullptr;

// An attempt is tried this often in all, with the backoff doubling twice
// each time: 0.1 s, 0.4 s, 1.6 s.
constexpr int kAheadAttempts = 4;
constexpr long kFirstBackoffMs = 100;
// An attempt that keeps giving way is retried this often, for at most
// partheal.ddl_lock_timeout; then it counts as a failed attempt.
constexpr long kGiveWayRetryMs = 50;

// The outcome of one try, and what it does to the slot.
struct Tried {
  bool done = true;  // the slot is freed
  long retry_ms = 0;
};

// Create-ahead: nobody waits for it, so it gives way to other sessions'
// locks (partitions::LockWait).
Tried try_once(AheadSlot& mine, int64 size, bool* served) {
  int64 first = 0;
  // No state: the table was unmanaged since; a new size: the number means
  // another partition now. Either way the attempt is dropped.
  if (size <= 0 || size != mine.partition_size ||
      !partitions::first_id_of(mine.partition, size, PG_INT64_MAX, &first))
    return {};
  *served = true;
  Creation c = create_in_transaction(mine.relid, fmt::format("for id {}", first), [&] {
    return partitions::ensure_covering(
        mine.relid, first, partitions::KeySpace::ids(size, PG_INT64_MIN, PG_INT64_MAX).spec(),
        partitions::LockWait::kGiveWay);
  });
  if (!c.error && c.made.gave_way) {
    TimestampTz at = GetCurrentTimestamp();
    if (mine.busy_since == 0) mine.busy_since = at;
    if (TimestampDifferenceMilliseconds(mine.busy_since, at) < settings::ddl_lock_timeout_ms) {
      mine.not_before = TimestampTzPlusMilliseconds(at, kGiveWayRetryMs);
      return {false, kGiveWayRetryMs};
    }
    mine.busy_since = 0;
    c.error = PgError(ERRCODE_LOCK_NOT_AVAILABLE,
                      fmt::format("other sessions held or queued for a lock on the table for "
                                  "partheal.ddl_lock_timeout ({} ms), and partheal gave way",
                                  settings::ddl_lock_timeout_ms));
  }
  if (!c.error) {
    if (!c.made.partition.empty())
      registry::with_state(mine.relid,
                           [](registry::TableState& s) { registry::count(s.ahead_created); });
    return {};
  }
  if (++mine.attempts < kAheadAttempts) {
    long backoff = kFirstBackoffMs << (2 * (mine.attempts - 1));
    mine.not_before = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), backoff);
    return {false, backoff};
  }
  registry::with_state(mine.relid,
                       [](registry::TableState& s) { registry::count(s.ahead_failed); });
  pg::report(WARNING, c.error->sqlerrcode(),
             fmt::format("{} create-ahead of partition {} of {} dropped after {} attempts: {}",
                         errors::kLogAheadGaveUp, mine.partition, pg::relation_label(mine.relid),
                         mine.attempts, c.error->what()),
             {{}, "The heal creates the partition when rows reach it."});
  return {};
}

}  // namespace

bool queue_create_ahead(Oid relid, int64 partition, int64 partition_size) {
  bool queued = false;
  SpinLockAcquire(&queue->mutex);
  for (AheadSlot& slot : queue->slots) {
    if (slot.used) continue;
    slot = AheadSlot{true, MyDatabaseId, relid, partition, partition_size, 0, 0, 0};
    queued = true;
    break;
  }
  SpinLockRelease(&queue->mutex);
  if (!queued) return false;  // the caller says so, rate-limited
  // The append that crossed the mark must not wait for, or fail with, the
  // worker: a worker that cannot start now is started by the next heal.
  try {
    want_worker(MyDatabaseId, false);
  } catch (const PgError& e) {
    pg::report(LOG, 0,
               fmt::format("{} create-ahead could not start the worker: {}",
                           errors::kLogAheadDropped, e.what()));
  }
  return true;
}

long serve_create_ahead(Oid dboid, bool* served) {
  long next_ms = settings::naptime_ms;
  for (AheadSlot& slot : queue->slots) {
    TimestampTz now = GetCurrentTimestamp();
    SpinLockAcquire(&queue->mutex);
    AheadSlot mine = slot;
    SpinLockRelease(&queue->mutex);
    if (!mine.used || mine.dboid != dboid) continue;
    if (mine.not_before > now) {
      next_ms = Min(next_ms, TimestampDifferenceMilliseconds(now, mine.not_before));
      continue;
    }
    int64 size = 0;
    registry::with_state(mine.relid, [&](registry::TableState& s) {
      size = static_cast<int64>(pg_atomic_read_u64(&s.partition_size));
    });
    Tried tried = try_once(mine, size, served);
    if (!tried.done) next_ms = Min(next_ms, tried.retry_ms);
    SpinLockAcquire(&queue->mutex);
    if (tried.done) {
      slot.used = false;
    } else {
      slot.attempts = mine.attempts;
      slot.not_before = mine.not_before;
      slot.busy_since = mine.busy_since;
    }
    SpinLockRelease(&queue->mutex);
  }
  return next_ms;
}

int queued_attempts(Oid dboid) {
  int n = 0;
  SpinLockAcquire(&queue->mutex);
  for (const AheadSlot& slot : queue->slots)
    if (slot.used && slot.dboid == dboid) ++n;
  SpinLockRelease(&queue->mutex);
  return n;
}

void drop_queued_attempts(Oid dboid) {
  SpinLockAcquire(&queue->mutex);
  for (AheadSlot& slot : queue->slots)
    if (slot.used && slot.dboid == dboid) slot.used = false;
  SpinLockRelease(&queue->mutex);
}

Size ahead_queue_shmem_size() {
  return sizeof(Queue);
}

void init_ahead_queue(void* memory, bool found) {
  queue = static_cast<Queue*>(memory);
  if (found) return;
  std::memset(memory, 0, sizeof(Queue));
  SpinLockInit(&queue->mutex);
}

}  // namespace partheal::worker
