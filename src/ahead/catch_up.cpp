#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ahead/clock_poll.hpp"
#include "ahead/headroom.hpp"
#include "ahead/node_ranges.hpp"
#include "ahead/publish_next.hpp"
#include "pg/sequence.hpp"
#include "partitions/time_zone.hpp"
#include "registry/table_state.hpp"
#include "errors.hpp"
#include "partitions/catalog.hpp"
#include "partitions/ensure_covering.hpp"
#include "partitions/key_space.hpp"
#include "registry/registry.hpp"
#include "pg/boundary.hpp"
#include "pg/citus.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "pg/subxact.hpp"
#include "settings.hpp"
#include "ahead/catch_up.hpp"
#include "worker/requests.hpp"
#include "worker/transaction.hpp"

extern "C" {
#include "access/relation.h"
#include "partitioning/partdesc.h"
#include "storage/lmgr.h"
#include "utils/timestamp.h"
}

namespace partheal::ahead {

namespace {

// Writers that never call partheal_append draw ids through the column
// default, so no append sees their mark: the sequence position stands in.
// Whatever the position, every partition from its own up to the headroom
// must exist. A table that fell behind (a burst outran creation) is caught
// up here, current partition first, re-reading the position before each
// creation: failed inserts burn ids fast, and a partition for a position
// already passed helps no one.

// The sequence as the ahead math sees it.
ahead::Draws draws_of(const pg::SequencePosition& seq) {
  return ahead::Draws{seq.drawn ? seq.last : seq.next, seq.drawn, seq.increment, seq.cache};
}

constexpr long kFirstRetryMs = 1000;
constexpr long kMaxRetryMs = 60000;

struct TableWatch {
  ahead::Traffic traffic;
  TimestampTz retry_at = 0;  // after a failed creation
  long retry_ms = 0;
  std::string last_error;              // a poll error is logged when it changes, not every round
  Oid default_partition = InvalidOid;  // logged once, while attached
  bool default_drained = false;        // and whether the drain was on then
  TimestampTz busy_since = 0;          // the catch-up giving way since; 0: not
  bool busy_said = false;              // and said so
};

std::unordered_map<Oid, TableWatch>& watches() {
  static auto* w = new std::unordered_map<Oid, TableWatch>();
  return *w;
}

// A DEFAULT partition attached after registration takes every row without
// a partition, and partheal creates none while it is there: said once per
// DEFAULT partition in the log (again when its drain is turned on or off),
// shown in partheal_stats.default_partition, and the table is left out of
// the catch-up. False while it is attached.
bool note_default_partition(Oid relid, Relation rel, const registry::ManagedTable& table) {
  TableWatch& watch = watches()[relid];
  if (!table.shape.has_default_partition) {
    watch.default_partition = InvalidOid;
    return true;
  }
  Oid partition = partitions::default_partition(rel);
  // Said again when the drain is turned on or off for it.
  if (watch.default_partition == partition && watch.default_drained == table.drains_default())
    return false;
  watch.default_partition = partition;
  watch.default_drained = table.drains_default();
  // A time-keyed table may be registered with one; an id-keyed one got it
  // after its registration.
  if (table.drains_default()) {
    pg::report(LOG, 0,
               fmt::format("{} {} has a DEFAULT partition {}: rows without a window of their own "
                           "go there, and the worker makes their windows and moves them out "
                           "(drain_default)",
                           errors::kLogDefaultPartition, pg::relation_label(relid),
                           pg::relation_label(partition)));
    return false;
  }
  pg::report(WARNING, 0,
             fmt::format("{} {} has a DEFAULT partition {}{}: rows without a partition of their "
                         "own go there, and partheal creates no partitions for it until it is "
                         "detached",
                         errors::kLogDefaultPartition, pg::relation_label(relid),
                         pg::relation_label(partition),
                         table.shape.key_is_time ? "" : ", attached after it was registered"),
             {{}, "Move its rows into partitions with partheal_attach_window and detach it."});
  return false;
}

void poll_one(Oid relid, std::vector<Watched>& watched, int64& wake_at,
              std::vector<Oid>& with_default, std::vector<Oid>& with_retention) {
  bool locked = pg::guard([&] { return ConditionalLockRelationOid(relid, AccessShareLock); });
  if (!locked) return;  // busy with DDL: next round
  Relation rel = pg::guard([&] { return try_relation_open(relid, NoLock); });
  if (rel == nullptr) return;
  registry::TablePtr table = registry::lookup(rel);
  // A worker node's registration of a Citus table (copied by hand) is
  // neither retired nor drained here: their DDL is the coordinator's, and
  // Citus would refuse it, or worse, run it on this node alone. Its
  // creations are refused, and said, in create_child_table.
  const bool coordinators_own =
      table != nullptr && table->shape.citus_table && pg::citus::role() == pg::citus::Role::kWorker;
  // A non-owner's heal reads the worker's clock, not its session's.
  if (table != nullptr && table->shape.key_is_time)
    registry::set_worker_clock_offset(relid, partitions::wall_clock_offset(GetCurrentTimestamp()));
  if (table != nullptr && table->config.retains() && !coordinators_own)
    with_retention.push_back(relid);
  if (table != nullptr && !note_default_partition(relid, rel, *table)) {
    // The drain makes a drained table's windows ahead, and says which next.
    if (!table->drains_default())
      registry::set_next(relid, registry::NextReason::kDefault);
    else if (!coordinators_own)
      with_default.push_back(relid);
    pg::guard([&] { relation_close(rel, NoLock); });
    return;
  }
  if (table != nullptr && table->shape.key_is_time) {
    poll_by_clock(rel, *table, watched, wake_at);
    pg::guard([&] { relation_close(rel, NoLock); });
    return;
  }
  if (table != nullptr && table->config.mark_percent == 0)
    registry::set_next(relid, registry::NextReason::kOff);
  if (table != nullptr && table->config.mark_percent > 0) {
    std::optional<pg::SequencePosition> read = pg::read_sequence(table->shape.sequence, false);
    if (!read) {  // ALTER SEQUENCE under way: next round, never a wait
      pg::guard([&] { relation_close(rel, NoLock); });
      return;
    }
    const pg::SequencePosition& seq = *read;
    const int64 size = table->config.partition_size;
    TableWatch& watch = watches()[relid];
    const ahead::Draws draws = draws_of(seq);
    // No nextval returns more than MAXVALUE: a partition past it (a smallint
    // sequence feeding a bigint key) would never hold a row.
    const int64 reachable = Min(table->shape.key_max, seq.max_value);
    // Observed before the first draw too, so the first burst's rate is
    // known at the first poll that sees it, not one poll later.
    ahead::observe(watch.traffic, seq.last, GetCurrentTimestamp() / 1000);
    // premake partitions after the position's own are kept whatever the
    // traffic: a headroom of premake + 1, since one of the headroom is only
    // made once the position reaches its partition's mark (needed()).
    int headroom = Max(table->config.premake + 1,
                       ahead::headroom(watch.traffic, ahead::partition_step(seq.increment, size),
                                       settings::ahead_seconds, settings::max_ahead_partitions));
    // The watermark follows the ids in use: a sequence moved back (RESTART,
    // setval) must not leave the marks above it claimed for good.
    const int64 ceiling = ahead::watermark_ceiling(draws, size, table->config.mark_percent);
    registry::with_state(relid, [&](registry::TableState& s) {
      pg_atomic_write_u32(&s.headroom, static_cast<uint32>(headroom));
      registry::pull_watermark_down(&s, ceiling);
    });
    // Only a table missing a partition its draws need is caught up: an idle
    // one costs this look at its partition descriptor, nothing more.
    const std::vector<int64> ids =
        ahead::needed_ids(draws, size, table->config.mark_percent, headroom, reachable);
    std::optional<int64> missing;
    for (int64 id : ids)
      if (!missing && !partitions::routes(rel, id)) missing = id;
    publish_next(relid, draws, *table, ids, missing);
    std::vector<std::vector<int64>> other_ids =
        other_nodes_ids(relid, rel->rd_rel->relowner, *table, seq);
    for (const std::vector<int64>& node_ids : other_ids)
      for (int64 id : node_ids)
        if (!missing && !partitions::routes(rel, id)) missing = id;
    if (missing) {
      Watched w{};
      w.relid = relid;
      w.sequence = table->shape.sequence;
      w.size = size;
      w.mark_percent = table->config.mark_percent;
      w.key_max = reachable;
      w.headroom = headroom;
      w.spec = table->key_spec();
      w.other_nodes_ids = std::move(other_ids);
      watched.push_back(w);
    }
  }
  pg::guard([&] { relation_close(rel, NoLock); });
}

void log_poll_error(Oid relid, const PgError& e) {
  TableWatch& watch = watches()[relid];
  if (watch.last_error == e.what()) return;
  watch.last_error = e.what();
  pg::report(LOG, e.sqlerrcode(),
             fmt::format("{} sequence poll of {} failed: {}", errors::kLogCreateFailed,
                         pg::relation_label(relid), e.what()));
}

}  // namespace

namespace {
// A poll's transaction ends after this long, so that heal requests, served
// between transactions, never wait long for a poll of many tables.
constexpr long kPollSliceMs = 50;
}  // namespace

Poll poll_sequences(Oid dboid) {
  std::vector<Watched> watched;
  int64 wake_at = 0;
  std::vector<Oid> with_default;
  std::vector<Oid> with_retention;
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
        pg::in_rolled_back_subtransaction(
            [&] { poll_one(relid, watched, wake_at, with_default, with_retention); });
      } catch (const PgError& e) {
        error = e;
      }
      outcomes.emplace_back(relid, std::move(error));
    }
  };
  std::optional<PgError> failed = worker::in_transaction([&] {
    std::optional<std::vector<Oid>> now = registry::registered_tables_nowait();
    config_locked = !now;
    if (now) relids = std::move(*now);
    // A state whose table is no longer registered goes: one can be left by
    // a poll re-creating it from a snapshot that still saw the row
    // partheal_unmanage was deleting. Space is shared across databases.
    if (config_locked) return;
    registry::forget_all_but(relids);
    std::unordered_map<Oid, TableWatch> kept;
    for (Oid relid : relids) {
      auto it = watches().find(relid);
      if (it != watches().end()) kept.emplace(relid, std::move(it->second));
    }
    watches() = std::move(kept);
    ahead::keep_node_ranges_of(relids);
    poll_slice();
  });
  if (failed) return Poll{{}, failed, 0, {}, {}};
  while (next < relids.size()) {
    worker::serve_heal_requests(dboid);
    if (std::optional<PgError> error = worker::in_transaction(poll_slice)) {
      // Only the slice's own work failed (each table's error is caught):
      // the tables it had not reached wait for the next poll. A commit that
      // failed after the slice read every table is said of the last one.
      log_poll_error(relids[std::min(next, relids.size() - 1)], *error);
      break;
    }
  }
  for (const auto& [relid, error] : outcomes) {
    if (error)
      log_poll_error(relid, *error);
    else
      watches()[relid].last_error.clear();
  }
  return Poll{std::move(watched),        std::nullopt,  wake_at, std::move(with_default),
              std::move(with_retention), !config_locked};
}

namespace {

// Inside the worker's transaction: the first partition the table's position
// needs that is missing, made through ensure_covering. Empty when none is.
partitions::Ensured ensure_next_needed(const Watched& w) {
  if (w.by_clock) return ensure_next_by_clock(w);
  // The table before its sequence, as DROP TABLE locks them, and never
  // waiting: a DROP or other DDL under way goes first, the catch-up retries
  // next round. (Reading the sequence first deadlocked with DROP TABLE.)
  bool locked = pg::guard([&] { return ConditionalLockRelationOid(w.relid, AccessShareLock); });
  if (!locked) return {};
  Relation rel = pg::guard([&] { return try_relation_open(w.relid, NoLock); });
  if (rel == nullptr) return {};
  std::optional<pg::SequencePosition> seq = pg::read_sequence(w.sequence, false);
  if (!seq) {
    pg::guard([&] { relation_close(rel, NoLock); });
    return {};
  }
  partitions::refresh_partitions(rel);
  int64 missing_id = 0;
  bool missing = false;
  // A sequence not drawn from yet (a new table, a RESTART) needs the
  // partition of its first id before anyone draws it. Each partition is
  // checked at both ends: a hand-made or cut partition may cover one end of
  // the aligned range and not the other.
  // On Citus, every node's range in turn, nearest its position first, so
  // that no range waits while another's headroom is made.
  std::vector<std::vector<int64>> ranges = {
      ahead::needed_ids(draws_of(*seq), w.size, w.mark_percent, w.headroom, w.key_max)};
  ranges.insert(ranges.end(), w.other_nodes_ids.begin(), w.other_nodes_ids.end());
  for (size_t depth = 0; !missing; ++depth) {
    bool any = false;
    for (const std::vector<int64>& ids : ranges) {
      if (depth >= ids.size()) continue;
      any = true;
      if (partitions::routes(rel, ids[depth])) continue;
      missing = true;
      missing_id = ids[depth];
      break;
    }
    if (!any) break;
  }
  pg::guard([&] { relation_close(rel, NoLock); });
  if (!missing) return {};
  return partitions::ensure_covering(w.relid, missing_id, w.spec, partitions::LockWait::kGiveWay);
}

}  // namespace

// Creates what the positions need, one partition per table in turn, each in
// a transaction of its own, serving the appenders' heal requests before
// each. A table gets at most its headroom plus one creations a round, and
// the round ends after the pass in which its DDL reached kRoundDdlBudgetMs,
// so that no table far behind starves the others and the next poll (which
// sees a table that fell behind meanwhile) is never long in coming. Every
// table behind still gets one creation in each round. True when anything
// was made.
// On Citus a partition costs a shard per shard of the parent (tens of ms
// for 32): tables that need many would otherwise hold the round, and the
// poll of every table, for seconds.
constexpr long kRoundDdlBudgetMs = 1000;

bool catch_up(Oid dboid, const std::vector<Watched>& watched) {
  std::vector<int> budget;
  long round_ms = 0;
  for (const Watched& w : watched) budget.push_back(w.headroom + 1);
  bool made_any = false;
  for (bool progress = true; progress && round_ms < kRoundDdlBudgetMs;) {
    progress = false;
    for (size_t i = 0; i < watched.size(); ++i) {
      const Watched& w = watched[i];
      TableWatch& watch = watches()[w.relid];
      if (budget[i] == 0 || watch.retry_at > GetCurrentTimestamp()) continue;
      worker::serve_heal_requests(dboid);
      TimestampTz started = GetCurrentTimestamp();
      worker::Creation c = worker::create_in_transaction(
          w.relid, w.by_clock ? "catching up with the clock" : "catching up with its sequence",
          [&] { return ensure_next_needed(w); });
      round_ms += TimestampDifferenceMilliseconds(started, GetCurrentTimestamp());
      if (c.error) {
        // PHL03 is logged; back off so a table that cannot be extended (a
        // lock held for long, no CREATE privilege) is not retried every round.
        watch.retry_ms = watch.retry_ms == 0 ? kFirstRetryMs : Min(watch.retry_ms * 2, kMaxRetryMs);
        watch.retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), watch.retry_ms);
        registry::with_state(w.relid,
                             [](registry::TableState& s) { registry::count(s.ahead_failed); });
        budget[i] = 0;
        continue;
      }
      watch.retry_ms = 0;
      if (c.made.gave_way) {
        // The table is busy: the next round tries again. Said once, after
        // partheal.ddl_lock_timeout of it, since plain INSERTs may be
        // failing meanwhile.
        budget[i] = 0;
        TimestampTz at = GetCurrentTimestamp();
        if (watch.busy_since == 0) watch.busy_since = at;
        if (!watch.busy_said && TimestampDifferenceMilliseconds(watch.busy_since, at) >=
                                    settings::ddl_lock_timeout_ms) {
          watch.busy_said = true;
          pg::report(LOG, ERRCODE_LOCK_NOT_AVAILABLE,
                     fmt::format("{} could not create the partition of {} catching up with {}: "
                                 "other sessions have held or queued for a lock on it for {} ms; "
                                 "partheal gives way and tries again every poll",
                                 errors::kLogCreateFailed, pg::relation_label(w.relid),
                                 w.by_clock ? "the clock" : "its sequence",
                                 TimestampDifferenceMilliseconds(watch.busy_since, at)));
        }
        continue;
      }
      watch.busy_since = 0;
      watch.busy_said = false;
      if (c.made.partition.empty()) {
        budget[i] = 0;  // nothing missing
        continue;
      }
      registry::with_state(w.relid,
                           [](registry::TableState& s) { registry::count(s.ahead_created); });
      --budget[i];
      progress = true;
      made_any = true;
    }
  }
  return made_any;
}

worker::PollOutcome poll_and_catch_up(Oid dboid) {
  Poll poll = poll_sequences(dboid);
  worker::PollOutcome out;
  out.registrations = std::move(poll.registrations);
  out.made_any = catch_up(dboid, poll.behind);
  out.wake_at = poll.wake_at;
  out.with_default = std::move(poll.with_default);
  out.with_retention = std::move(poll.with_retention);
  out.looked = poll.looked;
  return out;
}

}  // namespace partheal::ahead
