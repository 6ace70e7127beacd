#include "worker/requests.hpp"

#include <fmt/format.h>

#include <cstring>
#include <string>

#include "errors.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/compat.hpp"
#include "pg/error_context.hpp"
#include "pg/guc_level.hpp"
#include "pg/pause.hpp"
#include "pg/report.hpp"
#include "settings.hpp"
#include "worker/databases.hpp"
#include "worker/transaction.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/lock.h"
#include "storage/spin.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

namespace partheal::worker {

namespace {

// kTaken: the worker took the request and is starting its transaction;
// kRunning: it holds the request's lock (request_lock_tag), which the asker
// waits on, so that PostgreSQL's deadlock detector sees the asker waiting
// for the worker.
enum class RequestState : uint32 { kFree, kPending, kTaken, kRunning, kDone };

constexpr size_t kTextSize = 512;

// The worker's answer as it crosses shared memory: partitions::Ensured, or
// the error's SQLSTATE, message, detail and hint, cut to fixed buffers.
struct Answer {
  int sqlerrcode = 0;
  bool gave_way = false;
  char message[kTextSize] = {};
  char detail[kTextSize] = {};
  char hint[kTextSize] = {};
  char partition[NAMEDATALEN] = {};
  char range[128] = {};
  partitions::Range made;
};

// One per backend: a backend waits for one partition at a time.
struct Request {
  slock_t mutex;
  uint64 generation;  // bumped per request, so a late answer to an abandoned one is dropped
  RequestState state;
  Oid dboid;
  Oid relid;
  int64 id;  // the key
  partitions::KeySpec spec;
  Answer answer;
  ConditionVariable answered;
};

Request* requests = nullptr;
int nrequests = 0;

// The lock the worker holds, ExclusiveLock for its whole transaction, while
// it serves the request in slot `slot` of generation `generation`, and that
// the asker waits on in ShareLock. pg_locks shows it as an advisory lock
// with objsubid 20562 ("PR"), classid the slot and objid the generation's
// low 32 bits.
constexpr uint16 kRequestLockClass = 0x5052;
void request_lock_tag(LOCKTAG* tag, Oid dboid, int slot, uint64 generation) {
  SET_LOCKTAG_ADVISORY(*tag, dboid, static_cast<uint32>(slot), static_cast<uint32>(generation),
                       kRequestLockClass);
}

void copy_text(char* dst, const std::string& src, size_t size) {
  strlcpy(dst, src.c_str(), size);
}

Answer encode(const Creation& c) {
  Answer a;
  if (c.error) {
    const ErrorFields& f = c.error->fields();
    a.sqlerrcode = f.sqlerrcode;
    copy_text(a.message, f.message, sizeof(a.message));
    copy_text(a.detail, f.detail, sizeof(a.detail));
    copy_text(a.hint, f.hint, sizeof(a.hint));
    return a;
  }
  copy_text(a.partition, c.made.partition, sizeof(a.partition));
  a.made = c.made.made;
  copy_text(a.range, c.made.range, sizeof(a.range));
  a.gave_way = c.made.gave_way;
  return a;
}

// As PostgreSQL's own errors name a table: unqualified.
std::string table_name(Oid relid) {
  const char* name = pg::guard([&] { return get_rel_name(relid); });
  return name != nullptr ? name : fmt::format("relation {}", relid);
}

// Gives up on a request: a late answer to it is then dropped.
void abandon(Request& r, uint64 generation) noexcept {
  SpinLockAcquire(&r.mutex);
  if (r.generation == generation) r.state = RequestState::kFree;
  SpinLockRelease(&r.mutex);
}

// "id 42", or "key '2026-03-29 00:00:00+00'" for a time key: what messages
// say the partition was for.
std::string key_label(const partitions::KeySpec& spec, int64 key) {
  partitions::KeySpace keys(spec);  // key_text needs no zone: times show in UTC
  return keys.is_time() ? fmt::format("key '{}'", keys.key_text(key)) : fmt::format("id {}", key);
}

[[noreturn]] void raise_worker_error(const Answer& a, Oid relid, const std::string& what) {
  std::string table = table_name(relid);
  std::string hint = a.hint;
  if (hint.empty() && a.sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
    hint =
        "Another session holds a lock on the table that partition creation needs; "
        "partheal.ddl_lock_timeout bounds the wait. Retry once it is released.";
  pg::fail(
      a.sqlerrcode,
      fmt::format("could not create the partition of \"{}\" for {}: {}", table, what, a.message),
      a.detail, hint);
}

struct WaitContext {
  const char* table;
  const char* what;
};

void wait_context(void* arg) {
  auto* w = static_cast<WaitContext*>(arg);
  errcontext("waiting for the partheal worker to create the partition of \"%s\" for %s", w->table,
             w->what);
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
                                 const std::string& what) {
  LOCKTAG tag;
  request_lock_tag(&tag, MyDatabaseId, slot, generation);
  std::string table = table_name(relid);
  WaitContext w{table.c_str(), what.c_str()};
  // Its own GUC level, left on every way out: a wait that timed out is
  // followed by more PostgreSQL code before any abort.
  int level = pg::enter_safe_search_path();
  pg::set_local("lock_timeout", std::to_string(Max(remaining_ms, 1L)));
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

// Posts the request in this backend's slot; returns its generation.
uint64 post(Request& r, Oid relid, int64 id, const partitions::KeySpec& spec) {
  SpinLockAcquire(&r.mutex);
  uint64 generation = ++r.generation;
  r.state = RequestState::kPending;
  r.dboid = MyDatabaseId;
  r.relid = relid;
  r.id = id;
  r.spec = spec;
  r.answer = Answer{};
  SpinLockRelease(&r.mutex);
  return generation;
}

// Waits for the answer until `deadline`; false when it did not come.
bool await_answer(Request& r, int slot, uint64 generation, TimestampTz deadline, Oid relid,
                  const std::string& what, Answer* answer) {
  static uint32 answer_registered = 0;
  const uint32 answer_event = pg::named_wait_event("PartHealWorkerAnswer", answer_registered);
  bool answered = false;
  want_worker(MyDatabaseId, true);
  pg::guard([&] { ConditionVariablePrepareToSleep(&r.answered); });
  for (;;) {
    SpinLockAcquire(&r.mutex);
    bool running = r.generation == generation && r.state == RequestState::kRunning;
    if (r.generation == generation && r.state == RequestState::kDone) {
      *answer = r.answer;
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
      if (!wait_for_worker_transaction(slot, generation, remaining, relid, what)) break;
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
  return answered;
}

}  // namespace

namespace {

partitions::Ensured ask_worker(Oid relid, int64 id, const partitions::KeySpec& spec,
                               bool wait_for_moves) {
  settings::require_preloaded();
  const int slot = pg::compat::backend_index();
  const std::string what = key_label(spec, id);
  Request& r = requests[slot];
  TimestampTz deadline =
      TimestampTzPlusMilliseconds(GetCurrentTimestamp(), settings::heal_wait_timeout_ms);
  Answer answer;
  bool answered = false;
  citus::ShardMoveWait moves(relid);
  for (;;) {
    uint64 generation = post(r, relid, id, spec);
    try {
      answered = await_answer(r, slot, generation, deadline, relid, what, &answer);
    } catch (...) {
      abandon(r, generation);
      throw;
    }
    if (!answered) abandon(r, generation);
    // While a shard of the table's colocation group moves, Citus refuses
    // the partition's creation at once: asked again once the group's lock
    // is free, within this heal's wait, by an append that may wait for a
    // move (citus/shard_moves.hpp); any other fails at once.
    if (!answered || answer.sqlerrcode == 0 || !wait_for_moves ||
        !moves.may_wait_after(answer.message))
      break;
    if (moves.first())
      pg::report(LOG, 0,
                 fmt::format("{} heal of \"{}\" for {} waits for a shard move: {}",
                             errors::kLogHeal, table_name(relid), what, answer.message),
                 {"Citus makes no partition of the table while a shard of its colocation "
                  "group moves; partheal asks again within partheal.heal_wait_timeout.",
                  {}});
    // Polled here, not by asking the worker, whose every try would be a
    // creation that Citus refuses.
    if (!moves.wait_until_free(deadline)) break;
  }
  if (!answered) {
    std::string table = table_name(relid);
    pg::fail(errors::kHealWaitTimeout,
             fmt::format("timed out waiting for the partition of \"{}\" for {}", table, what),
             fmt::format("The partheal worker did not answer within partheal.heal_wait_timeout "
                         "({} ms).",
                         settings::heal_wait_timeout_ms),
             "Check the server log for the worker's messages, and raise "
             "partheal.heal_wait_timeout if partition creation is slow.");
  }
  if (answer.sqlerrcode != 0) raise_worker_error(answer, relid, what);
  return partitions::Ensured{answer.partition, answer.range, answer.gave_way, answer.made};
}

}  // namespace

partitions::Ensured create_covering_partition(Oid relid, int64 id,
                                              const partitions::KeySpec& spec) {
  return ask_worker(relid, id, spec, true);
}

partitions::Ensured create_covering_partition_at_once(Oid relid, int64 id,
                                                      const partitions::KeySpec& spec) {
  return ask_worker(relid, id, spec, false);
}

namespace {

// First thing in the transaction that serves request `slot`: its lock, held
// to the end of the transaction, which the asker waits on. Then the asker
// is told the transaction runs.
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

bool heal_requests_pending(Oid dboid) {
  for (int i = 0; i < nrequests; ++i) {
    Request& r = requests[i];
    SpinLockAcquire(&r.mutex);
    bool pending = r.state == RequestState::kPending && r.dboid == dboid;
    SpinLockRelease(&r.mutex);
    if (pending) return true;
  }
  return false;
}

bool heal_request_waiting() noexcept {
  const Oid dboid = MyDatabaseId;
  for (int i = 0; i < nrequests; ++i) {
    const volatile Request& r = requests[i];
    if (r.state == RequestState::kPending && r.dboid == dboid) return true;
  }
  return false;
}

void serve_heal_requests(Oid dboid) {
  for (int i = 0; i < nrequests; ++i) {
    Request& r = requests[i];
    SpinLockAcquire(&r.mutex);
    bool mine = r.state == RequestState::kPending && r.dboid == dboid;
    uint64 generation = r.generation;
    Oid relid = r.relid;
    int64 id = r.id;
    partitions::KeySpec spec = r.spec;
    if (mine) r.state = RequestState::kTaken;
    SpinLockRelease(&r.mutex);
    if (!mine) continue;

    Answer answer = encode(create_in_transaction(relid, "for " + key_label(spec, id), [&] {
      hold_request_lock(r, i, generation);
      return partitions::ensure_covering(relid, id, spec);
    }));
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

void hand_back_heal_requests(Oid dboid) {
  for (int i = 0; i < nrequests; ++i) {
    Request& r = requests[i];
    SpinLockAcquire(&r.mutex);
    bool ours =
        r.dboid == dboid && (r.state == RequestState::kRunning || r.state == RequestState::kTaken);
    if (ours) r.state = RequestState::kPending;
    SpinLockRelease(&r.mutex);
    if (ours || r.dboid == dboid) pg::guard([&] { ConditionVariableBroadcast(&r.answered); });
  }
}

Size heal_requests_shmem_size() {
  return mul_size(sizeof(Request), MaxBackends);
}

void init_heal_requests(void* memory, bool found) {
  requests = static_cast<Request*>(memory);
  nrequests = MaxBackends;
  if (found) return;
  std::memset(memory, 0, sizeof(Request) * static_cast<size_t>(nrequests));
  for (int i = 0; i < nrequests; ++i) {
    SpinLockInit(&requests[i].mutex);
    ConditionVariableInit(&requests[i].answered);
  }
}

}  // namespace partheal::worker
