#include <fmt/format.h>

#include <string>

#include "ahead/table_state.hpp"
#include "errors.hpp"
#include "heal/ensure_covering.hpp"
#include "heal/partition_math.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "settings.hpp"
#include "worker/own_transaction.hpp"
#include "worker/serve.hpp"
#include "worker/shared.hpp"

extern "C" {
#include "storage/lock.h"
#include "utils/timestamp.h"
}

namespace partheal::worker {

namespace {

// A create-ahead attempt is tried this often in all, with the backoff
// doubling twice each time: 0.1 s, 0.4 s, 1.6 s.
constexpr int kAheadAttempts = 4;
constexpr long kFirstBackoffMs = 100;

// Create-ahead: nobody waits for it, so it gives way to other sessions'
// locks (heal::LockWait).
Answer create_ahead_in_own_transaction(Oid relid, int64 id, int64 partition_size) {
  return in_own_transaction(relid, fmt::format("for id {}", id), [&] {
    return heal::ensure_covering(relid, id, partition_size, heal::LockWait::kGiveWay);
  });
}

// A create-ahead attempt that keeps giving way is retried this often, for
// at most partheal.ddl_lock_timeout; then it counts as a failed attempt.
constexpr long kGiveWayRetryMs = 50;

// First thing in the transaction that serves request `slot`: its lock, held
// to the end of the transaction, which the asker waits on (requests.cpp).
// Then the asker is told the transaction runs.
void hold_request_lock(Request& r, int slot, uint64 generation) {
  LOCKTAG tag;
  request_lock_tag(&tag, MyDatabaseId, slot, generation);
  pg::guard([&] { (void)LockAcquire(&tag, ExclusiveLock, false, false); });
  SpinLockAcquire(&r.mutex);
  if (r.generation == generation && r.state == RequestState::kTaken)
    r.state = RequestState::kRunning;
  SpinLockRelease(&r.mutex);
  pg::guard([&] { ConditionVariableBroadcast(&r.answered); });
}

}  // namespace

void serve_pending(Oid dboid) {
  Shared& s = shared();
  for (int i = 0; i < s.nrequests; ++i) {
    Request& r = s.requests[i];
    SpinLockAcquire(&r.mutex);
    bool mine = r.state == RequestState::kPending && r.dboid == dboid;
    uint64 generation = r.generation;
    Oid relid = r.relid;
    int64 id = r.id;
    int64 size = r.partition_size;
    if (mine) r.state = RequestState::kTaken;
    SpinLockRelease(&r.mutex);
    if (!mine) continue;

    Answer answer = in_own_transaction(relid, fmt::format("for id {}", id), [&] {
      hold_request_lock(r, i, generation);
      return heal::ensure_covering(relid, id, size);
    });
    SpinLockAcquire(&r.mutex);
    if (r.generation == generation &&
        (r.state == RequestState::kRunning || r.state == RequestState::kTaken)) {
      r.answer = answer;
      r.state = RequestState::kDone;
    }
    SpinLockRelease(&r.mutex);
    pg::guard([&] { ConditionVariableBroadcast(&r.answered); });
  }
}

long serve_ahead(Oid dboid, bool* served) {
  Shared& s = shared();
  long next_ms = settings::naptime_ms;
  for (AheadSlot& slot : s.ahead) {
    TimestampTz now = GetCurrentTimestamp();
    SpinLockAcquire(&s.ahead_mutex);
    AheadSlot mine = slot;
    SpinLockRelease(&s.ahead_mutex);
    if (!mine.used || mine.dboid != dboid) continue;
    if (mine.not_before > now) {
      next_ms = Min(next_ms, TimestampDifferenceMilliseconds(now, mine.not_before));
      continue;
    }
    int64 size = 0;
    ahead::with_state(mine.relid, [&](ahead::TableState& s) {
      size = static_cast<int64>(pg_atomic_read_u64(&s.partition_size));
    });
    int64 first = 0;
    bool done = true;
    // No state: the table was unmanaged since; a new size: the number means
    // another partition now. Either way the attempt is dropped.
    if (size > 0 && size == mine.partition_size &&
        heal::first_id_of(mine.partition, size, PG_INT64_MAX, &first)) {
      *served = true;
      Answer answer = create_ahead_in_own_transaction(mine.relid, first, size);
      if (answer.gave_way) {
        TimestampTz at = GetCurrentTimestamp();
        if (mine.busy_since == 0) mine.busy_since = at;
        if (TimestampDifferenceMilliseconds(mine.busy_since, at) < settings::ddl_lock_timeout_ms) {
          done = false;
          mine.not_before = TimestampTzPlusMilliseconds(at, kGiveWayRetryMs);
          next_ms = Min(next_ms, kGiveWayRetryMs);
        } else {
          answer.sqlerrcode = ERRCODE_LOCK_NOT_AVAILABLE;
          copy_text(answer.message,
                    fmt::format("other sessions held or queued for a lock on the table for "
                                "partheal.ddl_lock_timeout ({} ms), and partheal gave way",
                                settings::ddl_lock_timeout_ms),
                    sizeof(answer.message));
          mine.busy_since = 0;
        }
      }
      if (answer.gave_way && !done) {
        // retried soon, below
      } else if (answer.sqlerrcode == 0) {
        if (answer.partition[0] != '\0')
          ahead::with_state(mine.relid,
                            [](ahead::TableState& s) { ahead::count(s.ahead_created); });
      } else if (++mine.attempts < kAheadAttempts) {
        done = false;
        long backoff = kFirstBackoffMs << (2 * (mine.attempts - 1));
        mine.not_before = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), backoff);
        next_ms = Min(next_ms, backoff);
      } else {
        ahead::with_state(mine.relid, [](ahead::TableState& s) { ahead::count(s.ahead_failed); });
        std::string line =
            fmt::format("{} create-ahead of partition {} of {} dropped after {} attempts: {}",
                        errors::kLogAheadGaveUp, mine.partition, pg::relation_label(mine.relid),
                        mine.attempts, answer.message);
        const char* text = line.c_str();
        int code = answer.sqlerrcode;
        pg::guard([&] {
          ereport(WARNING, (errcode(code), errmsg_internal("%s", text),
                            errhint("The heal creates the partition when rows reach it.")));
        });
      }
    }
    SpinLockAcquire(&s.ahead_mutex);
    if (done) {
      slot.used = false;
    } else {
      slot.attempts = mine.attempts;
      slot.not_before = mine.not_before;
      slot.busy_since = mine.busy_since;
    }
    SpinLockRelease(&s.ahead_mutex);
  }
  return next_ms;
}

}  // namespace partheal::worker
