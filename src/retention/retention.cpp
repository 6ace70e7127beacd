#include "retention/retention.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>

#include "errors.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "registry/table_state.hpp"
#include "retention/back_off.hpp"
#include "retention/batches.hpp"
#include "retention/retire_step.hpp"
#include "retention/watch.hpp"
#include "settings.hpp"

namespace partheal::retention {

namespace {

void say_left(Oid relid, const Step& step, const std::string& why, const std::string& hint) {
  pg::report(LOG, 0,
             fmt::format("{} retention left {} {} attached to {}: {}", errors::kLogRetentionLeft,
                         step.label, step.bounds, pg::relation_label(relid), why),
             {fmt::format("Its upper bound is at or before the horizon, {}.", step.horizon), hint});
}

const char* kGaveWayToHeal = "It gave way to a heal request, which the worker serves first.";

worker::StepResult result(worker::Outcome outcome, bool progress = false) {
  worker::StepResult r;
  r.outcome = outcome;
  r.progress = progress;
  return r;
}

class Retention final : public worker::Job {
 public:
  const char* activity() const override { return "partheal: retention"; }
  bool enabled() const override { return settings::retention; }

  // A Citus worker node's copy of a coordinator's registration is never
  // retired here: its DDL is the coordinator's.
  bool due(const worker::Look& look, worker::Schedule&) override {
    return look.table.config.retains() && !look.coordinators_own;
  }

  // A table whose batch went takes another step at once, up to
  // kBatchesPerRound a round: a backlog goes a batch after another, heal
  // requests served between them.
  int most_steps(Oid, worker::Schedule&) override { return kBatchesPerRound; }

  void step(Oid relid, worker::Schedule& s) override {
    step_ = Step{};
    attempting_.reset();
    gave_way_to_heal_ = false;
    BackOffs back_offs{s, s.memo<TableWatch>(relid), relid};
    retire_step(relid, back_offs, step_, attempting_, &gave_way_to_heal_);
  }

  worker::StepResult settle(Oid relid, const std::optional<PgError>& error,
                            worker::Schedule& s) override;

 private:
  Step step_;
  std::optional<Attempt> attempting_;
  bool gave_way_to_heal_ = false;

  worker::StepResult top_level_stopped(BackOffs& b, const PgError& error);
  worker::StepResult failed(BackOffs& b, const PgError& error);
  worker::StepResult detached(BackOffs& b);
  void log_once(BackOffs& b, const PgError& error, const std::string& what,
                const std::string& detail, const std::string& hint);
};

// Logged when it changes, not every round.
void Retention::log_once(BackOffs& b, const PgError& error, const std::string& what,
                         const std::string& detail, const std::string& hint) {
  if (b.watch.last_error == error.what()) return;
  b.watch.last_error = error.what();
  pg::report(LOG, error.sqlerrcode(), what, {detail, hint});
}

// DETACH CONCURRENTLY's first transaction, committed, may have left the
// partition detach-pending: out of the table, completed by FINALIZE at a
// later round. A DROP that failed otherwise than by waiting is left out of
// it then.
worker::StepResult Retention::top_level_stopped(BackOffs& b, const PgError& error) {
  const bool waited = waited_for(error.sqlerrcode());
  if (!waited && step_.drop) b.watch.drop_failures[step_.partition] = error.what();
  log_once(b, error,
           fmt::format("{} retention's {} of {} from {} stopped: {}", errors::kLogRetentionLeft,
                       step_.concurrent ? "DETACH CONCURRENTLY" : "FINALIZE", step_.label,
                       pg::relation_label(b.relid), error.what()),
           gave_way_to_heal_ ? kGaveWayToHeal
           : waited          ? "A transaction that used the table was older than the detach."
                             : "",
           "partheal completes the detach (FINALIZE) at a later poll, backing off.");
  b.stopped(step_.partition, waited, attempting_ && attempting_->early);
  return result(worker::Outcome::kGaveWay);
}

// FINALIZE's own locks, on the parent and the window, gave way (the step
// took them within the attach budget): as after its wait.
worker::StepResult Retention::failed(BackOffs& b, const PgError& error) {
  log_once(b, error,
           fmt::format("{} retention of {} failed: {}", errors::kLogRetentionLeft,
                       pg::relation_label(b.relid), error.what()),
           gave_way_to_heal_ ? kGaveWayToHeal : "", "");
  if (attempting_)
    b.stopped(attempting_->partition, attempting_->finalize && waited_for(error.sqlerrcode()),
              attempting_->early);
  return result(worker::Outcome::kGaveWay);
}

// The window went: counted and said.
worker::StepResult Retention::detached(BackOffs& b) {
  const bool kept = step_.result.outcome == DetachOutcome::kDetached;
  b.forget(step_.partition);
  b.watch.said_left.erase(step_.partition);
  registry::with_state(b.relid, [kept](registry::TableState& st) {
    registry::count(kept ? st.detached_windows : st.dropped_windows);
  });
  const std::string how =
      step_.finalized ? "completed a pending DETACH CONCURRENTLY (FINALIZE)"
      : step_.concurrent
          ? fmt::format(
                "detached it concurrently: the parent was held for {} ms up to its first "
                "commit in SHARE UPDATE EXCLUSIVE, against neither writers nor readers",
                step_.result.parent_held_ms)
          : fmt::format("the parent was locked for {} ms", step_.result.parent_held_ms);
  pg::report(
      LOG, 0,
      fmt::format("{} retention detached {} {} from {}{}: its upper bound is {} "
                  "the horizon, {}; {}",
                  errors::kLogRetired, step_.label, step_.bounds, pg::relation_label(b.relid),
                  kept ? " and kept it as a table" : " and dropped it",
                  step_.due ? "at or before" : "after", step_.horizon, how));
  return result(worker::Outcome::kDone, true);
}

worker::StepResult Retention::settle(Oid relid, const std::optional<PgError>& error,
                                     worker::Schedule& s) {
  BackOffs b{s, s.memo<TableWatch>(relid), relid};
  if (error) return step_.ran_top_level ? top_level_stopped(b, *error) : failed(b, *error);
  if (!step_.tried) return result(worker::Outcome::kNextTime);
  if (!step_.batch.retired.empty()) {
    say_batch(relid, b.watch, step_.batch, step_.keep);
    return result(worker::Outcome::kMore, true);
  }
  // Completed without the DROP that had failed: said, and kept.
  auto failed_drop = b.watch.drop_failures.find(step_.partition);
  if (step_.finalized && failed_drop != b.watch.drop_failures.end()) {
    pg::report(LOG, 0,
               fmt::format("{} retention detached {} {} from {} but could not drop it: {}",
                           errors::kLogRetentionLeft, step_.label, step_.bounds,
                           pg::relation_label(relid), failed_drop->second),
               {"It is a plain table now, no longer a partition.", "Drop it yourself."});
    b.watch.drop_failures.erase(failed_drop);
  }
  b.watch.last_error.clear();
  // Left while referenced or foreign: looked at again in a minute, said
  // once.
  auto leave = [&](const std::string& why, const std::string& hint) {
    b.for_a_minute(step_.partition);
    if (b.watch.said_left.insert(step_.partition).second) say_left(relid, step_, why, hint);
    return result(worker::Outcome::kDone);
  };
  if (step_.foreign)
    return leave("it is a foreign table", "Detach and drop it yourself when its data may go.");
  switch (step_.result.outcome) {
    case DetachOutcome::kDropped:
    case DetachOutcome::kDetached:
      return detached(b);
    case DetachOutcome::kReferenced:
      return leave(step_.result.reason,
                   "Drop the foreign keys that reference the table, and partheal detaches it "
                   "within a minute; or detach it yourself.");
    case DetachOutcome::kConcurrent:  // run in the step, and kDetached since
      return result(worker::Outcome::kDone);
    case DetachOutcome::kBusy:
      break;
  }
  // Gave way to a heal request: served next, and the window is tried again
  // at the worker's next round, which comes at once.
  if (step_.result.gave_way) return result(worker::Outcome::kGaveWay, true);
  b.stopped(step_.partition, false, false);
  say_left(relid, step_, step_.result.reason, "partheal tries again, backing off to a minute.");
  return result(worker::Outcome::kGaveWay);
}

}  // namespace

worker::Job& retention_job() {
  static auto* job = new Retention();  // registered once, at _PG_init
  return *job;
}

}  // namespace partheal::retention
