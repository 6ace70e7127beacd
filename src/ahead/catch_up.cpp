#include "ahead/catch_up.hpp"

#include <fmt/format.h>

#include <optional>
#include <utility>
#include <vector>

#include "ahead/clock_poll.hpp"
#include "ahead/sequence_poll.hpp"
#include "errors.hpp"
#include "partitions/catalog.hpp"
#include "partitions/ensure_covering.hpp"
#include "partitions/time_zone.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "registry/table_state.hpp"
#include "settings.hpp"

extern "C" {
#include "access/relation.h"
#include "storage/lmgr.h"
#include "utils/timestamp.h"
}

namespace partheal::ahead {

namespace {

// A DEFAULT partition attached after registration takes every row without
// a partition, and partheal creates none while it is there: said once per
// DEFAULT partition in the log (again when its drain is turned on or off),
// shown in partheal_stats.default_partition, and the table is left out of
// the catch-up. False while it is attached.
bool note_default_partition(const worker::Look& look, TableWatch& watch) {
  const registry::ManagedTable& table = look.table;
  if (!table.shape.has_default_partition()) {
    watch.default_partition = InvalidOid;
    return true;
  }
  Oid partition = partitions::default_partition(look.rel);
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
                           errors::kLogDefaultPartition, pg::relation_label(look.relid),
                           pg::relation_label(partition)));
    return false;
  }
  pg::report(WARNING, 0,
             fmt::format("{} {} has a DEFAULT partition {}{}: rows without a partition of their "
                         "own go there, and partheal creates no partitions for it until it is "
                         "detached",
                         errors::kLogDefaultPartition, pg::relation_label(look.relid),
                         pg::relation_label(partition),
                         table.shape.key_is_time ? "" : ", attached after it was registered"),
             {{}, "Move its rows into partitions with partheal_attach_window and detach it."});
  return false;
}

// Inside the step's transaction: the first partition the table's position
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
  // A sequence not drawn from yet (a new table, a RESTART) needs the
  // partition of its first id before anyone draws it. Each partition is
  // checked at both ends: a hand-made or cut partition may cover one end of
  // the aligned range and not the other. On Citus, every node's range in
  // turn, nearest its position first, so that no range waits while
  // another's headroom is made.
  std::vector<std::vector<int64>> ranges = {
      needed_ids(draws_of(*seq), w.size, w.mark_percent, w.headroom, w.key_max)};
  ranges.insert(ranges.end(), w.other_nodes_ids.begin(), w.other_nodes_ids.end());
  std::optional<int64> missing;
  for (size_t depth = 0; !missing; ++depth) {
    bool any = false;
    for (const std::vector<int64>& ids : ranges) {
      if (depth >= ids.size()) continue;
      any = true;
      if (partitions::routes(rel, ids[depth])) continue;
      missing = ids[depth];
      break;
    }
    if (!any) break;
  }
  pg::guard([&] { relation_close(rel, NoLock); });
  if (!missing) return {};
  return partitions::ensure_covering(w.relid, *missing, w.spec, partitions::LockWait::kGiveWay);
}

// On Citus a partition costs a shard per shard of the parent (tens of ms
// for 32): tables that need many would otherwise hold the round, and the
// look at every table, for seconds. So the job's steps stop after the pass
// in which they reached this; every table behind still gets one a round.
constexpr long kRoundDdlBudgetMs = 1000;

class CatchUp final : public worker::Job {
 public:
  const char* activity() const override { return "partheal: creating a partition"; }

  // A table with a DEFAULT partition, or create-ahead off, is never due;
  // the others are when their position needs a partition that is missing.
  bool due(const worker::Look& look, worker::Schedule& s) override {
    const registry::ManagedTable& table = look.table;
    TableWatch& watch = s.memo<TableWatch>(look.relid);
    // A non-owner's heal reads the worker's clock, not its session's.
    if (table.shape.key_is_time)
      registry::set_worker_clock_offset(look.relid,
                                        partitions::wall_clock_offset(GetCurrentTimestamp()));
    if (!note_default_partition(look, watch)) {
      // The drain makes a drained table's windows ahead, and says which next.
      if (!table.drains_default()) registry::set_next(look.relid, registry::NextReason::kDefault);
      return false;
    }
    std::optional<Watched> behind;
    if (table.shape.key_is_time) {
      std::vector<Watched> watched;
      int64 wake_at = 0;
      poll_by_clock(look.rel, table, watched, wake_at);
      s.wake_at(wake_at);
      if (!watched.empty()) behind = std::move(watched.front());
    } else if (table.config.mark_percent == 0) {
      registry::set_next(look.relid, registry::NextReason::kOff);
    } else {
      behind = poll_sequence(look, watch);
    }
    if (behind) watch.behind = std::move(*behind);
    return behind.has_value();
  }

  void look_failed(Oid relid, const PgError& e, worker::Schedule& s) override {
    TableWatch& watch = s.memo<TableWatch>(relid);
    if (watch.last_error == e.what()) return;
    watch.last_error = e.what();
    pg::report(LOG, e.sqlerrcode(),
               fmt::format("{} sequence poll of {} failed: {}", errors::kLogCreateFailed,
                           pg::relation_label(relid), e.what()));
  }

  void looked(Oid relid, worker::Schedule& s) override {
    s.memo<TableWatch>(relid).last_error.clear();
  }

  // At most its headroom plus one creations a round.
  int most_steps(Oid relid, worker::Schedule& s) override {
    return s.memo<TableWatch>(relid).behind.headroom + 1;
  }

  long round_budget_ms() const override { return kRoundDdlBudgetMs; }

  void step(Oid relid, worker::Schedule& s) override {
    made_ = ensure_next_needed(s.memo<TableWatch>(relid).behind);
  }

  worker::StepResult settle(Oid relid, const std::optional<PgError>& error,
                            worker::Schedule& s) override;

 private:
  partitions::Ensured made_;
  void said_busy(Oid relid, TableWatch& watch);
};

// The table is busy: the next round tries again. Said once, after
// partheal.ddl_lock_timeout of it, since plain INSERTs may be failing
// meanwhile.
void CatchUp::said_busy(Oid relid, TableWatch& watch) {
  const TimestampTz at = GetCurrentTimestamp();
  if (watch.busy_since == 0) watch.busy_since = at;
  if (watch.busy_said ||
      TimestampDifferenceMilliseconds(watch.busy_since, at) < settings::ddl_lock_timeout_ms)
    return;
  watch.busy_said = true;
  pg::report(LOG, ERRCODE_LOCK_NOT_AVAILABLE,
             fmt::format("{} could not create the partition of {} catching up with {}: "
                         "other sessions have held or queued for a lock on it for {} ms; "
                         "partheal gives way and tries again every poll",
                         errors::kLogCreateFailed, pg::relation_label(relid),
                         watch.behind.by_clock ? "the clock" : "its sequence",
                         TimestampDifferenceMilliseconds(watch.busy_since, at)));
}

worker::StepResult CatchUp::settle(Oid relid, const std::optional<PgError>& error,
                                   worker::Schedule& s) {
  TableWatch& watch = s.memo<TableWatch>(relid);
  worker::StepResult r;
  if (error) {
    // PHL03 is logged; the scheduler backs off, so a table that cannot be
    // extended (a lock held for long, no CREATE privilege) is not retried
    // every round.
    partitions::log_creation_failure(
        relid,
        watch.behind.by_clock ? "catching up with the clock" : "catching up with its sequence",
        *error);
    registry::with_state(relid, [](registry::TableState& st) { registry::count(st.ahead_failed); });
    r.outcome = worker::Outcome::kFailed;
    return r;
  }
  if (made_.gave_way) {
    said_busy(relid, watch);
    r.outcome = worker::Outcome::kGaveWay;
    return r;
  }
  watch.busy_since = 0;
  watch.busy_said = false;
  if (made_.partition.empty()) {
    r.outcome = worker::Outcome::kDone;  // nothing missing
    return r;
  }
  registry::with_state(relid, [](registry::TableState& st) { registry::count(st.ahead_created); });
  r.outcome = worker::Outcome::kMore;
  r.progress = true;
  return r;
}

}  // namespace

worker::Job& catch_up_job() {
  static auto* job = new CatchUp();  // registered once, at _PG_init
  return *job;
}

}  // namespace partheal::ahead
