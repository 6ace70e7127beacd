#include <fmt/format.h>

#include <cstring>

#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "settings.hpp"
#include "worker/requests.hpp"
#include "worker/databases.hpp"
#include "worker/shared.hpp"

extern "C" {
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
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

Created create_covering_partition(Oid relid, int64 id, int64 partition_size) {
  settings::require_preloaded();
  Shared& s = shared();
  Request& r = s.requests[MyBackendId - 1];
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
      if (r.generation == generation && r.state == RequestState::kDone) {
        answer = r.answer;
        r.state = RequestState::kFree;
        answered = true;
      }
      SpinLockRelease(&r.mutex);
      if (answered) break;
      long remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
      if (remaining <= 0) break;
      // A worker that died leaves its pending requests behind: the
      // launcher starts another; PH003 at once if it cannot.
      want_worker(MyDatabaseId, true);
      pg::guard([&] {
        (void)ConditionVariableTimedSleep(&r.answered, Min(remaining, 1000L), PG_WAIT_EXTENSION);
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
    slot = AheadSlot{true, MyDatabaseId, relid, partition, partition_size, 0, 0};
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
