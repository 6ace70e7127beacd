// The round: the look at every registered table, then each job's steps.
// TimescaleDB's bgw scheduler is the model (the scheduler owns the jobs,
// each job's next start and its back-off); partheal's jobs run inside one
// worker per database, one step per transaction.
#include "worker/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "pg/boundary.hpp"
#include "pg/report.hpp"
#include "pg/subxact.hpp"
#include "registry/table_state.hpp"
#include "worker/databases.hpp"
#include "worker/requests.hpp"
#include "worker/transaction.hpp"

extern "C" {
#include "access/relation.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
}

namespace partheal::worker {

namespace {

std::vector<Job*>& jobs() {
  static auto* all = new std::vector<Job*>();  // registered once, at _PG_init
  return *all;
}

// A look's transaction ends after this long, so that heal requests, served
// between transactions, never wait long for a look at many tables.
constexpr long kLookSliceMs = 50;
// A step run again at once (again_now) at most this often in a row.
constexpr int kMostAgainNow = 8;

}  // namespace

bool Schedule::backing_off(Oid relid, const back_offs::Window& window) const {
  const TimestampTz now = pg::guard([] { return GetCurrentTimestamp(); });
  return back_offs::waiting(dboid_, job_, relid, window, now);
}

void Schedule::back_off(Oid relid, const back_offs::Window& window, long fixed_ms) {
  back_offs::back_off(dboid_, job_, relid, window, fixed_ms);
}

void Schedule::clear(Oid relid, const back_offs::Window& window) {
  back_offs::clear(dboid_, job_, relid, window);
}

void Schedule::keep_windows(Oid relid, const std::vector<int64>& keep) {
  back_offs::keep_windows(dboid_, job_, relid, keep);
}

void Schedule::serve_heals() const {
  serve_heal_requests(dboid_);
}

bool Schedule::heal_waiting() const {
  return heal_requests_pending(dboid_);
}

bool Schedule::heal_waiting_now() noexcept {
  return heal_request_waiting();
}

void Schedule::wake_at(TimestampTz at) {
  if (at > 0 && (wake_at_ == 0 || at < wake_at_)) wake_at_ = at;
}

std::optional<PgError> Schedule::read_in_transaction(const std::function<void()>& f) {
  return in_transaction(f);
}

void Schedule::keep_memos_of(const std::vector<Oid>& registered) {
  // Sorted once: a round with thousands of tables looks each memo up in
  // log time.
  std::vector<Oid> sorted(registered);
  std::sort(sorted.begin(), sorted.end());
  for (auto it = memos_.begin(); it != memos_.end();)
    it = std::binary_search(sorted.begin(), sorted.end(), it->first.second) ? std::next(it)
                                                                            : memos_.erase(it);
}

// One round, over one database.
struct Round {
  Schedule& s;
  std::vector<Oid> relids;
  std::vector<std::vector<Oid>> due;  // per job
  size_t next = 0;                    // the next table to look at
  bool progress = false;

  Round(Schedule& schedule, Oid dboid) : s(schedule), due(jobs().size()) {
    s.dboid_ = dboid;
    s.wake_at_ = 0;
  }
  TimestampTz wake_at() const { return s.wake_at_; }

  // The look at one table: each job's due(), in a subtransaction rolled
  // back at once. A job whose due() fails has its error; the jobs after it
  // look again in a fresh subtransaction.
  void look_at(Oid relid) {
    for (size_t from = 0; from < jobs().size();) {
      try {
        pg::in_rolled_back_subtransaction([&] { look_from(relid, from); });
        from = jobs().size();
      } catch (const PgError& e) {
        s.job_ = static_cast<int>(from);
        jobs()[from]->look_failed(relid, e, s);
        ++from;
      }
    }
  }

  // Runs the jobs' due() from `from` on; `from` follows the job looking.
  void look_from(Oid relid, size_t& from) {
    bool locked = pg::guard([&] { return ConditionalLockRelationOid(relid, AccessShareLock); });
    if (!locked) return;  // busy with DDL: next round
    Relation rel = pg::guard([&] { return try_relation_open(relid, NoLock); });
    if (rel == nullptr) return;
    registry::TablePtr table = registry::lookup(rel);
    if (table != nullptr) {
      const Look look{relid, rel, *table, table->shape.citus.on_worker_node()};
      for (; from < jobs().size(); ++from) {
        s.job_ = static_cast<int>(from);
        if (jobs()[from]->due(look, s)) due[from].push_back(relid);
        jobs()[from]->looked(relid, s);
      }
    }
    pg::guard([&] { relation_close(rel, NoLock); });
  }

  // As many tables as kLookSliceMs allows, in the caller's transaction.
  void look_slice() {
    const TimestampTz started = GetCurrentTimestamp();
    for (; next < relids.size(); ++next) {
      if (TimestampDifferenceMilliseconds(started, GetCurrentTimestamp()) >= kLookSliceMs) break;
      look_at(relids[next]);
    }
  }

  // Whatever was kept of tables no longer registered goes.
  void forget_unregistered() {
    registry::forget_all_but(relids);
    back_offs::forget_all_but(s.dboid_, &relids);
    s.keep_memos_of(relids);
  }

  // One step of the job for the table: heal requests first, then the step
  // in a transaction of its own, then the job's settle(), again at once
  // while it asks.
  StepResult step(Job& job, Oid relid, long& spent_ms) {
    StepResult r;
    for (int again = 0; again < kMostAgainNow; ++again) {
      serve_heal_requests(s.dboid_);
      const TimestampTz started = GetCurrentTimestamp();
      std::optional<PgError> error = step_transaction(job, relid);
      spent_ms += TimestampDifferenceMilliseconds(started, GetCurrentTimestamp());
      r = job.settle(relid, error, s);
      if (!r.again_now) break;
    }
    return r;
  }

  // The one place a failed step is aborted. A step may run a top-level
  // command that commits and begins transactions as the table's owner: the
  // worker's own user is put back after it, whatever ended it.
  std::optional<PgError> step_transaction(Job& job, Oid relid) {
    Oid user = InvalidOid;
    int context = 0;
    pg::guard([&] { GetUserIdAndSecContext(&user, &context); });
    std::optional<PgError> error;
    try {
      error = in_transaction([&] { job.step(relid, s); }, job.activity());
    } catch (const std::exception& caught) {
      detail::abort(true);
      error = PgError(ERRCODE_INTERNAL_ERROR, caught.what());
    }
    pg::guard([&] { SetUserIdAndSecContext(user, context); });
    return error;
  }

  // What the scheduler does with a step's back-offs.
  void settle_back_off(Oid relid, const StepResult& r) {
    switch (r.outcome) {
      case Outcome::kFailed:
        s.back_off(relid, r.window);
        return;
      case Outcome::kTooBig:
        s.back_off(relid, r.window, back_offs::kCapMs);
        return;
      case Outcome::kDone:
      case Outcome::kMore:
        if (r.window) s.clear(relid, r.window);
        break;
      case Outcome::kGaveWay:
      case Outcome::kNextTime:
        break;
    }
    s.clear(relid, std::nullopt);
  }

  // A job's steps over its due tables: passes in which each takes one
  // step, until none has steps left or the job's budget is spent.
  void run(size_t index) {
    Job& job = *jobs()[index];
    s.job_ = static_cast<int>(index);
    const std::vector<Oid>& tables = due[index];
    if (tables.empty() || !job.enabled()) return;
    job.round_begins(s);
    std::vector<int> left;
    for (Oid relid : tables) left.push_back(job.most_steps(relid, s));
    long spent_ms = 0;
    const long budget = job.round_budget_ms();
    for (bool pass = true; pass && (budget == 0 || spent_ms < budget);) {
      pass = false;
      for (size_t i = 0; i < tables.size(); ++i) {
        if (left[i] <= 0) continue;
        if (s.backing_off(tables[i], std::nullopt)) {
          left[i] = 0;
          continue;
        }
        const StepResult r = step(job, tables[i], spent_ms);
        settle_back_off(tables[i], r);
        progress = progress || r.progress;
        if (r.outcome == Outcome::kMore && --left[i] > 0) {
          pass = true;
        } else {
          left[i] = 0;
        }
      }
    }
  }
};

}  // namespace partheal::worker

namespace partheal::worker {

namespace {
Schedule& schedule() {
  static auto* s = new Schedule();  // the worker's, for its life
  return *s;
}
}  // namespace

void register_job(Job* job) {
  jobs().push_back(job);
}

RoundOutcome run_round(Oid dboid) {
  Round round(schedule(), dboid);
  bool config_locked = false;
  // One transaction for the registrations and as many tables as it looks
  // at within kLookSliceMs (all of them, unless there are thousands): an
  // idle table costs a subtransaction (no XID), never a transaction.
  std::optional<PgError> failed = in_transaction([&] {
    std::optional<std::vector<Oid>> now = registry::registered_tables_nowait();
    config_locked = !now;
    if (!now) return;
    round.relids = std::move(*now);
    round.forget_unregistered();
    round.look_slice();
  });
  RoundOutcome out;
  if (failed) {
    out.registrations = failed;
    return out;
  }
  while (round.next < round.relids.size()) {
    serve_heal_requests(dboid);
    if (std::optional<PgError> error = in_transaction([&] { round.look_slice(); })) {
      // Only the slice's own work failed (each table's error is caught):
      // the tables it had not reached wait for the next round.
      pg::report(LOG, error->sqlerrcode(),
                 fmt::format("partheal worker: a look at the registered tables failed: {}",
                             error->what()));
      break;
    }
  }
  for (size_t i = 0; i < jobs().size(); ++i) round.run(i);
  if (!config_locked) count_round(dboid);
  out.progress = round.progress;
  out.wake_at = round.wake_at();
  return out;
}

}  // namespace partheal::worker
