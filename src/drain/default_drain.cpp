#include "drain/default_drain.hpp"

#include <fmt/format.h>

#include <optional>
#include <set>
#include <string>
#include <utility>

#include "drain/default_contents.hpp"
#include "drain/snapshot_hold.hpp"
#include "drain/window_step.hpp"
#include "errors.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "registry/table_state.hpp"
#include "settings.hpp"

extern "C" {
#include "utils/timestamp.h"
}

namespace partheal::drain {

namespace {

// What the drain remembers of a table between rounds.
struct TableWatch : worker::Memo {
  std::string last_error;  // logged when it changes, not every round
  // Rows DEFAULT keeps past the retention horizon: counted once a minute,
  // said once each time they appear.
  TimestampTz expired_count_at = 0;
  bool expired_said = false;
  SnapshotHold hold;             // a move held back for older snapshots
  std::set<int64> too_big_said;  // windows left in DEFAULT for their size, said once
};

// How often the rows past the horizon are counted: a scan of DEFAULT
// under ACCESS SHARE, which no writer waits for, stopped at the cap.
constexpr long kExpiredCountMs = 60000;
// The most a round waits for older snapshots to go, across its tables: a
// round serves heal requests while it waits, but holds up the other
// tables' upkeep.
constexpr long kSnapshotWaitPerRoundMs = 1000;

class DefaultDrain final : public worker::Job {
 public:
  const char* activity() const override { return "partheal: moving rows out of DEFAULT"; }

  // A drained table with its DEFAULT attached; never a Citus worker node's
  // copy of a coordinator's registration.
  bool due(const worker::Look& look, worker::Schedule&) override {
    return look.table.shape.has_default_partition() && look.table.drains_default() &&
           !look.coordinators_own;
  }

  void round_begins(worker::Schedule&) override {
    round_deadline_ = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kSnapshotWaitPerRoundMs);
  }

  // Without partheal.drain_snapshot_wait, rows move at once; with it, a
  // window with rows to move is held back (the first pass, which samples
  // the snapshots older than the move), and moved in a second pass, which
  // settle() asks for once they have gone (drain/snapshot_hold.hpp).
  void step(Oid relid, worker::Schedule& s) override {
    if (!second_pass_) {
      TableWatch& watch = s.memo<TableWatch>(relid);
      count_expired_ = watch.expired_count_at <= GetCurrentTimestamp();
      snapshots_gone_ = settings::drain_snapshot_wait_ms == 0;
      released_ = HoldOutcome{};
      kept_ = Step{};
    }
    attempting_.reset();
    holders_ = pg::SnapshotHolders{};
    step_ = drain_one(relid, attempting_, count_expired_, snapshots_gone_, s);
    if (second_pass_) {
      step_.expired = kept_.expired;
      step_.horizon_key = kept_.horizon_key;
      step_.past_horizon = kept_.past_horizon;
    }
    if (step_.held_back) holders_ = pg::snapshot_holders();
  }

  worker::StepResult settle(Oid relid, const std::optional<PgError>& error,
                            worker::Schedule& s) override;

 private:
  TimestampTz round_deadline_ = 0;
  // One table's step, across its two passes.
  bool second_pass_ = false;
  bool count_expired_ = false;
  bool snapshots_gone_ = false;
  std::optional<int64> attempting_;
  Step step_;
  Step kept_;  // what the first pass counted
  pg::SnapshotHolders holders_;
  HoldOutcome released_;

  bool held_until_released(Oid relid, TableWatch& watch, worker::Schedule& s);
  void count_expired(Oid relid, TableWatch& watch);
  worker::StepResult counted(Oid relid, TableWatch& watch);
  worker::StepResult failed(Oid relid, TableWatch& watch, const PgError& error);
};

// A window held back for older snapshots: waits for them, outside the
// transaction. True when its rows may move now (a second pass, at once).
bool DefaultDrain::held_until_released(Oid relid, TableWatch& watch, worker::Schedule& s) {
  released_ =
      wait_for_snapshots(s, round_deadline_, watch.hold, holders_, relid, step_.held_window);
  if (!released_.go) return false;
  (void)counted(relid, watch);  // a window ahead the first pass attached
  kept_ = step_;
  snapshots_gone_ = true;
  count_expired_ = false;
  return true;
}

// The rows past the horizon, when this step counted them: partheal_stats,
// and said once each time they appear.
void DefaultDrain::count_expired(Oid relid, TableWatch& watch) {
  if (!step_.expired) return;
  watch.expired_count_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kExpiredCountMs);
  const int64 expired = *step_.expired;
  registry::with_state(relid, [expired](registry::TableState& st) {
    pg_atomic_write_u64(&st.expired_in_default, static_cast<uint64>(expired) + 1);
  });
  if (expired == 0) watch.expired_said = false;
  if (expired > 0 && !watch.expired_said) {
    watch.expired_said = true;
    report_expired(relid, expired, kExpiredCap, step_.past_horizon, step_.horizon_key);
  }
}

// What a pass did that the worker keeps: its back-off, and the counters of
// what it attached.
worker::StepResult DefaultDrain::counted(Oid relid, TableWatch& watch) {
  worker::StepResult r;
  r.outcome = worker::Outcome::kDone;
  if (step_.gave_up) {
    r.outcome = worker::Outcome::kFailed;
    r.window = *step_.gave_up;
  }
  if (step_.too_big) {
    if (watch.too_big_said.insert(*step_.too_big).second)
      pg::report(LOG, 0,
                 fmt::format("{} the window {} of {} is left in DEFAULT: it holds more than {} "
                             "rows there, more than the worker moves in one transaction",
                             errors::kLogAttachGaveUp, step_.window, pg::relation_label(relid),
                             kMaxWindowRows),
                 {{},
                  "Move them with CALL partheal_partition_data(), which commits window by "
                  "window."});
    r.outcome = worker::Outcome::kTooBig;
    r.window = *step_.too_big;
  }
  if (step_.attached) {
    const int64 moved = step_.rows_moved;
    const bool ahead = step_.ahead;
    registry::with_state(relid, [moved, ahead](registry::TableState& st) {
      if (ahead) {
        registry::count(st.ahead_created);
      } else {
        registry::count(st.drained_rows, static_cast<uint64>(moved));
        registry::count(st.drained_windows);
      }
    });
    watch.last_error.clear();
    watch.too_big_said.erase(step_.attached_lower);
    r.window = step_.attached_lower;
    r.progress = true;
  }
  return r;
}

// Logged when it changes, not every round. A window whose attach failed
// backs off on its own, so the windows after it still drain; a failure
// before any window was chosen backs the table off.
worker::StepResult DefaultDrain::failed(Oid relid, TableWatch& watch, const PgError& error) {
  if (watch.last_error != error.what()) {
    watch.last_error = error.what();
    pg::report(LOG, error.sqlerrcode(),
               fmt::format("{} the drain of the DEFAULT partition of {} failed: {}",
                           errors::kLogAttachGaveUp, pg::relation_label(relid), error.what()));
  }
  worker::StepResult r;
  r.outcome = worker::Outcome::kFailed;
  r.window = attempting_;
  return r;
}

worker::StepResult DefaultDrain::settle(Oid relid, const std::optional<PgError>& error,
                                        worker::Schedule& s) {
  TableWatch& watch = s.memo<TableWatch>(relid);
  if (!error && step_.held_back && held_until_released(relid, watch, s)) {
    second_pass_ = true;
    worker::StepResult again;
    again.again_now = true;
    return again;
  }
  second_pass_ = false;
  if (error) return failed(relid, watch, *error);
  // A hold that ended without a move (the rows went another way) is over.
  if (!step_.held_back) hold_over(watch.hold);
  count_expired(relid, watch);
  worker::StepResult r = counted(relid, watch);
  if (step_.attached && !released_.note.empty())
    pg::report(LOG, 0, released_.note, {released_.detail, {}});
  return r;
}

}  // namespace

worker::Job& default_drain_job() {
  static auto* job = new DefaultDrain();  // registered once, at _PG_init
  return *job;
}

}  // namespace partheal::drain
