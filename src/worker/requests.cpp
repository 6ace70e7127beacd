#include <fmt/format.h>

#include <cstring>

#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/error_context.hpp"
#include "pg/guc_scope.hpp"
#include "pg/pause.hpp"
#include "pg/relation.hpp"
#include "settings.hpp"
#include "worker/requests.hpp"
#include "worker/databases.hpp"
#include "worker/shared.hpp"

extern "C" {
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

namespace partheal::worker {

namespace {

Shared* state = nullptr;

Size shared_size() {
  return add_size(sizeof(Shared), mul_size(sizeof(Request), MaxBackends));
}

// As PostgreSQL's own errors name a table: unqualified.
std::string table_name(Oid relid) {
  const char* name = pg::guard([&] { return get_rel_name(relid); });
  return name != nullptr ? name : fmt::format("relation {}", relid);
}

}  // namespace

namespace {

// Gives up on a request: a late answer to it is then dropped.
void abandon(Request& r, uint64 generation) noexcept {
  SpinLockAcquire(&r.mutex);
  if (r.generation == generation) r.state = RequestState::kFree;
  SpinLockRelease(&r.mutex);
}

[[noreturn]] void raise_worker_error(const Answer& a, Oid relid, int64 id) {
  std::string table = table_name(relid);
  std::string hint = a.hint;
  if (hint.empty() && a.sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
    hint =
        "Another session holds a lock on the table that partition creation needs; "
        "partheal.ddl_lock_timeout bounds the wait. Retry once it is released.";
  pg::fail(
      a.sqlerrcode,
      fmt::format("could not create the partition of \"{}\" for id {}: {}", table, id, a.message),
      a.detail, hint);
}

}  // namespace

Shared& shared() {
  return *state;
}

void request_lock_tag(LOCKTAG* tag, Oid dboid, int slot, uint64 generation) {
  SET_LOCKTAG_ADVISORY(*tag, dboid, static_cast<uint32>(slot), static_cast<uint32>(generation),
                       kRequestLockClass);
}

namespace {

struct WaitContext {
  const char* table;
  int64 id;
};

void wait_context(void* arg) {
  auto* w = static_cast<WaitContext*>(arg);
  errcontext(
      "waiting for the partheal worker to create the partition of \"%s\" for id " INT64_FORMAT,
      w->table, w->id);
}

// Waits, as a lock wait PostgreSQL's deadlock detector can see, until the
// worker's transaction for this request ends: the worker holds the request's
// lock for all of it. A cycle through the worker (this transaction holds a
// lock a session queued behind it wants, and the worker queues behind that
// session) is then PostgreSQL's to resolve within deadlock_timeout, as if
// this backend took the worker's locks itself: the worker's request is
// moved ahead of the session's, or a true deadlock fails one of them with
// 40P01. Bounded by what is left of partheal.heal_wait_timeout; false when
// that ran out.
bool wait_for_worker_transaction(int slot, uint64 generation, long remaining_ms, Oid relid,
                                 int64 id) {
  LOCKTAG tag;
  request_lock_tag(&tag, MyDatabaseId, slot, generation);
  int level = pg::enter_safe_search_path();
  pg::set_local("lock_timeout", std::to_string(Max(remaining_ms, 1L)));
  std::string table = table_name(relid);
  WaitContext w{table.c_str(), id};
  try {
    pg::ErrorContext context(wait_context, &w);
    pg::guard([&] {
      (void)LockAcquire(&tag, ShareLock, false, false);
      LockRelease(&tag, ShareLock, false);
    });
  } catch (const PgError& e) {
    // A wait ended by an error leaves this backend in the lock's wait
    // queue until the (sub)transaction aborts; it must leave it now, since
    // more PostgreSQL code runs before the abort.
    pg::guard([] { LockErrorCleanup(); });
    pg::leave_guc_level(level);
    if (e.sqlerrcode() == ERRCODE_LOCK_NOT_AVAILABLE) return false;
    throw;
  }
  pg::leave_guc_level(level);
  return true;
}

}  // namespace

Created create_covering_partition(Oid relid, int64 id, int64 partition_size) {
  settings::require_preloaded();
  Shared& s = shared();
  const int slot = pg::compat::backend_index();
  Request& r = s.requests[slot];
  static uint32 answer_registered = 0;
  const uint32 answer_event = pg::named_wait_event("PartHealWorkerAnswer", answer_registered);
  SpinLockAcquire(&r.mutex);
  uint64 generation = ++r.generation;
  r.state = RequestState::kPending;
  r.dboid = MyDatabaseId;
  r.relid = relid;
  r.id = id;
  r.partition_size = partition_size;
  r.answer = Answer{};
  SpinLockRelease(&r.mutex);

  TimestampTz deadline =
      TimestampTzPlusMilliseconds(GetCurrentTimestamp(), settings::heal_wait_timeout_ms);
  Answer answer;
  bool answered = false;
  try {
    want_worker(MyDatabaseId, true);
    pg::guard([&] { ConditionVariablePrepareToSleep(&r.answered); });
    for (;;) {
      SpinLockAcquire(&r.mutex);
      bool running = r.generation == generation && r.state == RequestState::kRunning;
      if (r.generation == generation && r.state == RequestState::kDone) {
        answer = r.answer;
        r.state = RequestState::kFree;
        answered = true;
      }
      SpinLockRelease(&r.mutex);
      if (answered) break;
      long remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
      if (remaining <= 0) break;
      if (running) {
        // The worker's transaction has begun: wait for its end as a lock
        // wait, then for the answer it writes right after.
        if (!wait_for_worker_transaction(slot, generation, remaining, relid, id)) break;
        pg::guard([&] { (void)ConditionVariableTimedSleep(&r.answered, 10, answer_event); });
        continue;
      }
      // A worker that died leaves its pending requests behind: the
      // launcher starts another; PH003 at once if it cannot.
      want_worker(MyDatabaseId, true);
      pg::guard([&] {
        (void)ConditionVariableTimedSleep(&r.answered, Min(remaining, 1000L), answer_event);
      });
    }
    pg::guard([] { ConditionVariableCancelSleep(); });
  } catch (...) {
    abandon(r, generation);
    throw;
  }
  if (!answered) {
    abandon(r, generation);
    std::string table = table_name(relid);
    pg::fail(errors::kHealWaitTimeout,
             fmt::format("timed out waiting for the partition of \"{}\" for id {}", table, id),
             fmt::format("The partheal worker did not answer within partheal.heal_wait_timeout "
                         "({} ms).",
                         settings::heal_wait_timeout_ms),
             "Check the server log for the worker's messages, and raise "
             "partheal.heal_wait_timeout if partition creation is slow.");
  }
  if (answer.sqlerrcode != 0) raise_worker_error(answer, relid, id);
  return Created{answer.partition, answer.range};
}

bool request_create_ahead(Oid relid, int64 partition, int64 partition_size) {
  Shared& s = shared();
  bool queued = false;
  SpinLockAcquire(&s.ahead_mutex);
  for (AheadSlot& slot : s.ahead) {
    if (slot.used) continue;
    slot = AheadSlot{true, MyDatabaseId, relid, partition, partition_size, 0, 0, 0};
    queued = true;
    break;
  }
  SpinLockRelease(&s.ahead_mutex);
  if (!queued) return false;  // the caller says so, rate-limited
  // The append that crossed the mark must not wait for, or fail with, the
  // worker: a worker that cannot start now is started by the next heal.
  try {
    want_worker(MyDatabaseId, false);
  } catch (const PgError& e) {
    std::string line = fmt::format("{} create-ahead could not start the worker: {}",
                                   errors::kLogAheadDropped, e.what());
    const char* text = line.c_str();
    pg::guard([&] { ereport(LOG, (errmsg_internal("%s", text))); });
  }
  return true;
}

void request_shared_memory() {
  RequestAddinShmemSpace(shared_size());
  RequestNamedLWLockTranche("partheal", 1);
}

void init_shared_memory() {
  bool found = false;
  LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
  Size size = shared_size();
  state = static_cast<Shared*>(ShmemInitStruct("partheal", size, &found));
  if (!found) {
    std::memset(static_cast<void*>(state), 0, size);
    state->lock = &(GetNamedLWLockTranche("partheal"))->lock;
    state->nrequests = MaxBackends;
    state->requests = reinterpret_cast<Request*>(state + 1);
    SpinLockInit(&state->ahead_mutex);
    for (int i = 0; i < state->nrequests; ++i) {
      SpinLockInit(&state->requests[i].mutex);
      ConditionVariableInit(&state->requests[i].answered);
    }
  }
  LWLockRelease(AddinShmemInitLock);
}

}  // namespace partheal::worker
