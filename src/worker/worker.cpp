// The per-database background worker. It serves partition requests, each in
// a transaction of its own, so a partition it commits is visible to every
// session at once and survives the asker's rollback.
#include <fmt/format.h>

#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "ahead/headroom.hpp"
#include "ahead/mark.hpp"
#include "ahead/sequence.hpp"
#include "ahead/table_state.hpp"
#include "heal/bounds.hpp"
#include "heal/ensure_covering.hpp"
#include "heal/partition_math.hpp"
#include "manage/registry.hpp"
#include "settings.hpp"
#include "pg/boundary.hpp"
#include "pg/pause.hpp"
#include "pg/relation.hpp"
#include "pg/subxact.hpp"
#include "worker/databases.hpp"
#include "worker/shared.hpp"

extern "C" {
#include "partitioning/partdesc.h"
#include "access/relation.h"
#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "commands/sequence.h"
#include "storage/lmgr.h"
#include "utils/fmgrprotos.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"
}

namespace partheal::worker {

namespace {

// A create-ahead attempt is tried this often in all, with the backoff
// doubling twice each time: 0.1 s, 0.4 s, 1.6 s.
constexpr int kAheadAttempts = 4;
constexpr long kFirstBackoffMs = 100;

// Says why and exits; the launcher decides whether another worker starts.
// A worker that only looked for partheal where there is none says so at
// DEBUG1: the launcher looks in every database.
[[noreturn]] void exit_quietly(const char* why, int level = LOG) {
  ereport(level, (errmsg_internal("partheal worker exits: %s", why)));
  proc_exit(0);
}

void copy_text(char* dst, const std::string& src, size_t size) {
  strlcpy(dst, src.c_str(), size);
}

// Runs `ensure` (which ends in heal::ensure_covering) in a transaction of
// the worker's own, committed at once; a failure is logged as PHL03 and
// answered, never thrown. `for_what` ends the PHL03 line: "for id 25", or
// what the catch-up was doing when it does not know the id yet.
template <typename Ensure>
Answer in_own_transaction(Oid relid, const std::string& for_what, Ensure&& ensure) {
  Answer answer;
  try {
    pg::guard([] {
      SetCurrentStatementStartTimestamp();
      StartTransactionCommand();
      PushActiveSnapshot(GetTransactionSnapshot());
      pgstat_report_activity(STATE_RUNNING, "partheal: creating a partition");
    });
    heal::Ensured ensured = ensure();
    pg::guard([] {
      PopActiveSnapshot();
      CommitTransactionCommand();
      pgstat_report_activity(STATE_IDLE, nullptr);
    });
    copy_text(answer.partition, ensured.partition, sizeof(answer.partition));
    copy_text(answer.range, ensured.range, sizeof(answer.range));
    answer.gave_way = ensured.gave_way;
  } catch (const std::exception& caught) {
    // guard() flushed the error; aborting is what makes the worker reusable.
    pg::guard([] {
      AbortCurrentTransaction();
      pgstat_report_activity(STATE_IDLE, nullptr);
    });
    // Anything else (out of memory in C++) is answered as an internal
    // error, so that no asker is left waiting on a request marked running.
    auto* pg_error = dynamic_cast<const PgError*>(&caught);
    PgError other(ERRCODE_INTERNAL_ERROR, caught.what());
    const PgError& e = pg_error != nullptr ? *pg_error : other;
    const ErrorFields& f = e.fields();
    answer.sqlerrcode = f.sqlerrcode;
    copy_text(answer.message, f.message, sizeof(answer.message));
    copy_text(answer.detail, f.detail, sizeof(answer.detail));
    copy_text(answer.hint, f.hint, sizeof(answer.hint));
    std::string line =
        fmt::format("{} could not create the partition of {} {}: {}", errors::kLogCreateFailed,
                    pg::relation_label(relid), for_what, f.message);
    const char* text = line.c_str();
    int code = f.sqlerrcode;
    pg::guard([&] { ereport(LOG, (errcode(code), errmsg_internal("%s", text))); });
  }
  return answer;
}

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

// Serves the create-ahead attempts that are due; returns how long until the
// next one is (or naptime if none waits).
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

// Writers that never call partheal_append draw ids through the column
// default, so no append sees their mark: the sequence position stands in.
// Whatever the position, every partition from its own up to the headroom
// must exist. A table that fell behind (a burst outran creation) is caught
// up here, current partition first, re-reading the position before each
// creation: failed inserts burn ids fast, and a partition for a position
// already passed helps no one.
struct Watched {
  Oid relid;
  Oid sequence;
  int64 size;
  int mark_percent;
  int64 key_max;
  int headroom;
};

// The sequence as the ahead math sees it.
ahead::Draws draws_of(const ahead::SequencePosition& seq) {
  return ahead::Draws{seq.drawn ? seq.last : seq.next, seq.drawn, seq.increment, seq.cache};
}

constexpr long kFirstRetryMs = 1000;
constexpr long kMaxRetryMs = 60000;
// After a round that had to create partitions the next poll comes this soon.
constexpr long kBehindPollMs = 100;

struct TableWatch {
  ahead::Traffic traffic;
  TimestampTz retry_at = 0;  // after a failed creation
  long retry_ms = 0;
  std::string last_error;              // a poll error is logged when it changes, not every round
  Oid default_partition = InvalidOid;  // logged once, while attached
  TimestampTz busy_since = 0;          // the catch-up giving way since; 0: not
  bool busy_said = false;              // and said so
};

std::unordered_map<Oid, TableWatch>& watches() {
  static auto* w = new std::unordered_map<Oid, TableWatch>();
  return *w;
}

// A DEFAULT partition attached after registration takes every row without
// a partition, and partheal creates none while it is there: said once per
// DEFAULT partition in the log, shown in partheal_stats.default_partition,
// and the table is left out of the catch-up. False while it is attached.
bool note_default_partition(Oid relid, Relation rel, const manage::ManagedTable& table) {
  TableWatch& watch = watches()[relid];
  if (!table.shape.has_default_partition) {
    watch.default_partition = InvalidOid;
    return true;
  }
  Oid partition =
      pg::guard([&] { return get_default_oid_from_partdesc(RelationGetPartitionDesc(rel, true)); });
  if (watch.default_partition == partition) return false;
  watch.default_partition = partition;
  std::string line = fmt::format(
      "{} {} has a DEFAULT partition {}, attached after it was registered: rows without a "
      "partition of their own go there, and partheal creates no partitions for it until it is "
      "detached",
      errors::kLogDefaultPartition, pg::relation_label(relid), pg::relation_label(partition));
  const char* text = line.c_str();
  pg::guard([&] {
    ereport(WARNING,
            (errmsg_internal("%s", text),
             errhint("Move its rows into partitions with partheal_attach_window and detach it.")));
  });
  return false;
}

// partheal_stats.next_*: the partition the worker creates next and when:
// the first one missing, which it creates now, or the one past what the
// position needs, made when the position reaches the id that extends that.
void publish_next(Oid relid, const ahead::Draws& d, const manage::ManagedTable& table,
                  const std::vector<int64>& ids, std::optional<int64> missing) {
  const int64 size = table.config.partition_size;
  const int64 key_max = table.shape.key_max;
  auto aligned = [&](int64 n, ahead::NextReason reason, int64 at) {
    int64 first = 0;
    if (!heal::first_id_of(n, size, key_max, &first)) {
      ahead::set_next(relid, ahead::NextReason::kNone);
      return;
    }
    __int128 end = static_cast<__int128>(first) + size;
    ahead::set_next(relid, reason, first, end > key_max ? key_max : static_cast<int64>(end), at);
  };
  if (missing) {
    aligned(heal::partition_number(*missing, size), ahead::NextReason::kMissing, *missing);
    return;
  }
  if (ids.empty()) {
    ahead::set_next(relid, ahead::NextReason::kNone);
    return;
  }
  const __int128 inc = Max(d.increment, static_cast<int64>(1));
  if (inc > size) {
    const __int128 after = static_cast<__int128>(ids.back()) + inc;
    const __int128 next_draw = static_cast<__int128>(d.from) + inc;
    if (after > key_max || next_draw > key_max) {
      ahead::set_next(relid, ahead::NextReason::kNone);
      return;
    }
    aligned(heal::partition_number(static_cast<int64>(after), size), ahead::NextReason::kAtNextDraw,
            static_cast<int64>(next_draw));
    return;
  }
  const int percent = table.config.mark_percent;
  const int64 n = heal::partition_number(d.from, size);
  const bool past = d.from >= ahead::mark_threshold(n, size, percent, d.increment);
  const int64 last_n = heal::partition_number(ids.back(), size);
  if (last_n == PG_INT64_MAX || (past && n == PG_INT64_MAX)) {
    ahead::set_next(relid, ahead::NextReason::kNone);
    return;
  }
  aligned(last_n + 1, ahead::NextReason::kAtMark,
          ahead::mark_threshold(past ? n + 1 : n, size, percent, d.increment));
}

void poll_one(Oid relid, std::vector<Watched>& watched) {
  bool locked = pg::guard([&] { return ConditionalLockRelationOid(relid, AccessShareLock); });
  if (!locked) return;  // busy with DDL: next round
  Relation rel = pg::guard([&] { return try_relation_open(relid, NoLock); });
  if (rel == nullptr) return;
  manage::TablePtr table = manage::lookup(rel);
  if (table != nullptr && !note_default_partition(relid, rel, *table)) {
    ahead::set_next(relid, ahead::NextReason::kDefault);
    pg::guard([&] { relation_close(rel, NoLock); });
    return;
  }
  if (table != nullptr && table->config.mark_percent == 0)
    ahead::set_next(relid, ahead::NextReason::kOff);
  if (table != nullptr && table->config.mark_percent > 0) {
    std::optional<ahead::SequencePosition> read =
        ahead::read_sequence(table->shape.sequence, false);
    if (!read) {  // ALTER SEQUENCE under way: next round, never a wait
      pg::guard([&] { relation_close(rel, NoLock); });
      return;
    }
    const ahead::SequencePosition& seq = *read;
    const int64 size = table->config.partition_size;
    TableWatch& watch = watches()[relid];
    const ahead::Draws draws = draws_of(seq);
    // Observed before the first draw too, so the first burst's rate is
    // known at the first poll that sees it, not one poll later.
    ahead::observe(watch.traffic, seq.last, GetCurrentTimestamp() / 1000);
    int headroom = ahead::headroom(watch.traffic, ahead::partition_step(seq.increment, size),
                                   settings::ahead_seconds, settings::max_ahead_partitions);
    // The watermark follows the ids in use: a sequence moved back (RESTART,
    // setval) must not leave the marks above it claimed for good.
    const int64 ceiling = ahead::watermark_ceiling(draws, size, table->config.mark_percent);
    ahead::with_state(relid, [&](ahead::TableState& s) {
      pg_atomic_write_u32(&s.headroom, static_cast<uint32>(headroom));
      ahead::pull_watermark_down(&s, ceiling);
    });
    // Only a table missing a partition its draws need is caught up: an idle
    // one costs this look at its partition descriptor, nothing more.
    const std::vector<int64> ids =
        ahead::needed_ids(draws, size, table->config.mark_percent, headroom, table->shape.key_max);
    std::optional<int64> missing;
    for (int64 id : ids)
      if (!missing && !heal::routes(rel, id)) missing = id;
    publish_next(relid, draws, *table, ids, missing);
    if (missing)
      watched.push_back(Watched{relid, table->shape.sequence, size, table->config.mark_percent,
                                table->shape.key_max, headroom});
  }
  pg::guard([&] { relation_close(rel, NoLock); });
}

void log_poll_error(Oid relid, const PgError& e) {
  TableWatch& watch = watches()[relid];
  if (watch.last_error == e.what()) return;
  watch.last_error = e.what();
  std::string line = fmt::format("{} sequence poll of {} failed: {}", errors::kLogCreateFailed,
                                 pg::relation_label(relid), e.what());
  const char* text = line.c_str();
  int code = e.sqlerrcode();
  pg::guard([&] { ereport(LOG, (errcode(code), errmsg_internal("%s", text))); });
}

bool extension_installed() {
  return pg::guard([] {
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    bool found = get_extension_oid("partheal", true) != InvalidOid;
    CommitTransactionCommand();
    return found;
  });
}

// The extension is not (or no longer, after DROP EXTENSION) in this
// database: its shared state goes, and no worker runs here until a backend
// wants one again, or the launcher looks again.
[[noreturn]] void exit_without_extension(Oid dboid, int level) {
  worker_exits(dboid, true);
  pg::guard(
      [&] { exit_quietly("extension \"partheal\" is not installed in this database", level); });
  pg_unreachable();
}

// Runs f in a transaction of its own; a PgError is returned, not thrown.
template <typename F>
std::optional<PgError> in_transaction(F&& f) {
  try {
    pg::guard([] {
      SetCurrentStatementStartTimestamp();
      StartTransactionCommand();
      PushActiveSnapshot(GetTransactionSnapshot());
    });
    f();
    pg::guard([] {
      PopActiveSnapshot();
      CommitTransactionCommand();
    });
    return std::nullopt;
  } catch (const PgError& e) {
    pg::guard([] { AbortCurrentTransaction(); });
    return e;
  }
}

// Reads every registered table's sequence, each table in a transaction of
// its own, with the appenders' heal requests served before each: one table
// whose poll fails (or waits out lock_timeout) is logged once and neither
// stops nor delays the others.
// A poll's transaction ends after this long, so that heal requests, served
// between transactions, never wait long for a poll of many tables.
constexpr long kPollSliceMs = 50;

std::vector<Watched> poll_sequences(Oid dboid) {
  std::vector<Watched> watched;
  std::vector<Oid> relids;
  bool config_locked = false;
  std::vector<std::pair<Oid, std::optional<PgError>>> outcomes;
  // One transaction for the registrations and as many tables as it reads
  // within kPollSliceMs (all of them, unless there are thousands): an idle
  // table costs a subtransaction (no XID), never a transaction of its own.
  // Each table's subtransaction is rolled back, which releases its locks at
  // once, and an error in it is that table's alone.
  size_t next = 0;
  auto poll_slice = [&] {
    TimestampTz started = GetCurrentTimestamp();
    for (; next < relids.size(); ++next) {
      if (TimestampDifferenceMilliseconds(started, GetCurrentTimestamp()) >= kPollSliceMs) break;
      Oid relid = relids[next];
      std::optional<PgError> error;
      try {
        pg::in_rolled_back_subtransaction([&] { poll_one(relid, watched); });
      } catch (const PgError& e) {
        error = e;
      }
      outcomes.emplace_back(relid, std::move(error));
    }
  };
  std::optional<PgError> failed = in_transaction([&] {
    std::optional<std::vector<Oid>> now = manage::registered_tables_nowait();
    config_locked = !now;
    if (now) relids = std::move(*now);
    // A state whose table is no longer registered goes: one can be left by
    // a poll re-creating it from a snapshot that still saw the row
    // partheal_unmanage was deleting. Space is shared across databases.
    if (config_locked) return;
    ahead::forget_all_but(relids);
    std::unordered_map<Oid, TableWatch> kept;
    for (Oid relid : relids) {
      auto it = watches().find(relid);
      if (it != watches().end()) kept.emplace(relid, std::move(it->second));
    }
    watches() = std::move(kept);
    poll_slice();
  });
  if (failed) {
    if (!extension_installed()) exit_without_extension(dboid, LOG);
    std::string line =
        fmt::format("partheal worker: reading the registrations failed: {}", failed->what());
    const char* text = line.c_str();
    pg::guard([&] { ereport(LOG, (errmsg_internal("%s", text))); });
    return {};
  }
  while (next < relids.size()) {
    serve_pending(dboid);
    if (std::optional<PgError> error = in_transaction(poll_slice)) {
      // Only the slice's own work failed (each table's error is caught):
      // the tables it had not reached wait for the next poll.
      log_poll_error(relids[next], *error);
      break;
    }
  }
  for (const auto& [relid, error] : outcomes) {
    if (error)
      log_poll_error(relid, *error);
    else
      watches()[relid].last_error.clear();
  }
  return watched;
}

// Inside the worker's transaction: the first partition the table's position
// needs that is missing, made through ensure_covering. Empty when none is.
heal::Ensured ensure_next_needed(const Watched& w) {
  // The table before its sequence, as DROP TABLE locks them, and never
  // waiting: a DROP or other DDL under way goes first, the catch-up retries
  // next round. (Reading the sequence first deadlocked with DROP TABLE.)
  bool locked = pg::guard([&] { return ConditionalLockRelationOid(w.relid, AccessShareLock); });
  if (!locked) return {};
  Relation rel = pg::guard([&] { return try_relation_open(w.relid, NoLock); });
  if (rel == nullptr) return {};
  std::optional<ahead::SequencePosition> seq = ahead::read_sequence(w.sequence, false);
  if (!seq) {
    pg::guard([&] { relation_close(rel, NoLock); });
    return {};
  }
  heal::refresh_partitions(rel);
  int64 missing_id = 0;
  bool missing = false;
  // A sequence not drawn from yet (a new table, a RESTART) needs the
  // partition of its first id before anyone draws it. Each partition is
  // checked at both ends: a hand-made or cut partition may cover one end of
  // the aligned range and not the other.
  for (int64 id :
       ahead::needed_ids(draws_of(*seq), w.size, w.mark_percent, w.headroom, w.key_max)) {
    if (heal::routes(rel, id)) continue;
    missing = true;
    missing_id = id;
    break;
  }
  pg::guard([&] { relation_close(rel, NoLock); });
  if (!missing) return {};
  return heal::ensure_covering(w.relid, missing_id, w.size, heal::LockWait::kGiveWay);
}

// Creates what the positions need, one partition per table in turn, each in
// a transaction of its own, serving the appenders' heal requests before
// each. A table gets at most its headroom plus one creations a round, so one
// table far behind cannot starve the others. True when anything was made.
bool catch_up(Oid dboid, const std::vector<Watched>& watched) {
  std::vector<int> budget;
  for (const Watched& w : watched) budget.push_back(w.headroom + 1);
  bool made_any = false;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < watched.size(); ++i) {
      const Watched& w = watched[i];
      TableWatch& watch = watches()[w.relid];
      if (budget[i] == 0 || watch.retry_at > GetCurrentTimestamp()) continue;
      serve_pending(dboid);
      Answer answer = in_own_transaction(w.relid, "catching up with its sequence",
                                         [&] { return ensure_next_needed(w); });
      if (answer.sqlerrcode != 0) {
        // PHL03 is logged; back off so a table that cannot be extended (a
        // lock held for long, no CREATE privilege) is not retried every round.
        watch.retry_ms = watch.retry_ms == 0 ? kFirstRetryMs : Min(watch.retry_ms * 2, kMaxRetryMs);
        watch.retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), watch.retry_ms);
        ahead::with_state(w.relid, [](ahead::TableState& s) { ahead::count(s.ahead_failed); });
        budget[i] = 0;
        continue;
      }
      watch.retry_ms = 0;
      if (answer.gave_way) {
        // The table is busy: the next round tries again. Said once, after
        // partheal.ddl_lock_timeout of it, since plain INSERTs may be
        // failing meanwhile.
        budget[i] = 0;
        TimestampTz at = GetCurrentTimestamp();
        if (watch.busy_since == 0) watch.busy_since = at;
        if (!watch.busy_said && TimestampDifferenceMilliseconds(watch.busy_since, at) >=
                                    settings::ddl_lock_timeout_ms) {
          watch.busy_said = true;
          std::string line = fmt::format(
              "{} could not create the partition of {} catching up with its sequence: other "
              "sessions have held or queued for a lock on it for {} ms; partheal gives way and "
              "tries again every poll",
              errors::kLogCreateFailed, pg::relation_label(w.relid),
              TimestampDifferenceMilliseconds(watch.busy_since, at));
          const char* text = line.c_str();
          pg::guard([&] {
            ereport(LOG, (errcode(ERRCODE_LOCK_NOT_AVAILABLE), errmsg_internal("%s", text)));
          });
        }
        continue;
      }
      watch.busy_since = 0;
      watch.busy_said = false;
      if (answer.partition[0] == '\0') {
        budget[i] = 0;  // nothing missing
        continue;
      }
      ahead::with_state(w.relid, [](ahead::TableState& s) { ahead::count(s.ahead_created); });
      --budget[i];
      progress = true;
      made_any = true;
    }
  }
  return made_any;
}

// Runs at every exit, FATAL included: gives the database's entry back and
// hands back any request this worker had taken, so the next worker serves it.
void on_worker_exit(int, Datum arg) {
  Oid dboid = DatumGetObjectId(arg);
  worker_exits(dboid, false);
  Shared& s = shared();
  for (int i = 0; i < s.nrequests; ++i) {
    Request& r = s.requests[i];
    SpinLockAcquire(&r.mutex);
    bool ours =
        r.dboid == dboid && (r.state == RequestState::kRunning || r.state == RequestState::kTaken);
    if (ours) r.state = RequestState::kPending;
    SpinLockRelease(&r.mutex);
    if (ours || r.dboid == dboid) ConditionVariableBroadcast(&r.answered);
  }
}

// Every lock the worker waits for is bounded: the sequence poll, the config
// table, an ALTER EXTENSION under way. partheal.ddl_lock_timeout, as for DDL.
void bound_lock_waits() {
  std::string value = std::to_string(settings::ddl_lock_timeout_ms);
  const char* text = value.c_str();
  pg::guard([&] { SetConfigOption("lock_timeout", text, PGC_SUSET, PGC_S_OVERRIDE); });
}

// Names the worker in the CONTEXT of everything it logs.
char worker_database[NAMEDATALEN];
void worker_context(void*) {
  errcontext("partheal worker for database \"%s\"", worker_database);
}
ErrorContextCallback worker_context_entry{nullptr, worker_context, nullptr};

// A backend that wants a worker may have just created the extension in a
// transaction this worker cannot see yet: it looks again for a while.
bool wait_for_extension(bool wanted) {
  constexpr int kLooks = 20;
  for (int look = 0;; ++look) {
    try {
      if (extension_installed()) return true;
      if (!wanted || look == kLooks) return false;
      pg::pause_ms(500);
    } catch (const PgError&) {
      // A cancel: the look goes on.
      pg::guard([] {
        if (IsTransactionState()) AbortCurrentTransaction();
        QueryCancelPending = false;
      });
    }
  }
}

void worker_body(Datum arg) {
  Oid dboid = DatumGetObjectId(arg);
  pg::guard([&] {
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, die);
    // A cancel (pg_cancel_backend) ends what the worker is doing, not the worker.
    pqsignal(SIGINT, StatementCancelHandler);
    BackgroundWorkerUnblockSignals();
  });
  // Never connect into a database paused for DDL: the connection alone
  // would make the DDL fail.
  if (!worker_may_start(dboid)) pg::guard([] { exit_quietly("its database is paused for DDL"); });
  pg::guard([&] {
    BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
    pgstat_report_appname("partheal worker");
  });
  bool wanted = false;
  if (!announce_worker(dboid, &wanted))
    pg::guard([] { exit_quietly("its database is paused for DDL, or has a worker already"); });
  pg::guard([&] { before_shmem_exit(on_worker_exit, arg); });
  pg::guard([&] {
    StartTransactionCommand();
    const char* name = get_database_name(dboid);
    strlcpy(worker_database, name != nullptr ? name : "?", sizeof(worker_database));
    CommitTransactionCommand();
  });
  // Outside the guard: PG_TRY puts error_context_stack back as it found it.
  worker_context_entry.previous = error_context_stack;
  error_context_stack = &worker_context_entry;
  // The launcher starts one in every database; most have no partheal.
  if (!wait_for_extension(wanted)) exit_without_extension(dboid, DEBUG1);
  bound_lock_waits();

  TimestampTz next_poll = 0;
  for (;;) {
    try {
      serve_pending(dboid);
      if (GetCurrentTimestamp() >= next_poll) {
        bool behind = catch_up(dboid, poll_sequences(dboid));
        next_poll = TimestampTzPlusMilliseconds(
            GetCurrentTimestamp(),
            behind ? Min(kBehindPollMs, settings::naptime_ms) : settings::naptime_ms);
      }
      bool served = false;
      long wait_ms = serve_ahead(dboid, &served);
      // A mark was reached: traffic is flowing, and the poll that measures
      // its rate (and so the headroom) should not wait a whole naptime.
      if (served)
        next_poll =
            Min(next_poll, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kBehindPollMs));
      wait_ms = Min(wait_ms, TimestampDifferenceMilliseconds(GetCurrentTimestamp(), next_poll));
      pg::guard([] { (void)pgstat_report_stat(false); });
      pg::wait_for_work_ms(Max(wait_ms, 1L));
      bound_lock_waits();
    } catch (const std::exception& e) {
      // A cancel, or anything else not caught deeper: logged, and the
      // worker goes on with a clean slate.
      pg::guard([] {
        if (IsTransactionState()) AbortCurrentTransaction();
        QueryCancelPending = false;
      });
      auto* pg_error = dynamic_cast<const PgError*>(&e);
      int code = pg_error != nullptr ? pg_error->sqlerrcode() : ERRCODE_INTERNAL_ERROR;
      const char* text = e.what();
      pg::guard([&] { ereport(LOG, (errcode(code), errmsg("partheal worker: %s", text))); });
      pg::back_off_ms(100);
    }
  }
}

}  // namespace

}  // namespace partheal::worker

extern "C" {
PGDLLEXPORT void partheal_worker_main(Datum arg);
void partheal_worker_main(Datum arg) {
  partheal::pg::enter(partheal::worker::worker_body, arg);
}
}
