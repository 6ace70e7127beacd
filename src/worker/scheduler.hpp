// The worker's scheduler: it owns the per-database round. Create-ahead's
// catch-up, the drain of DEFAULT and retention are jobs that register here
// at _PG_init; the scheduler decides which tables are due for which job,
// runs each step in a transaction of its own (and aborts a failed one, in
// one place), serves heal requests between every two steps, and keeps each
// step's back-off per (job, table, window) in shared memory
// (worker/back_offs.hpp). A job says what one step does; it never runs a
// loop of its own, a transaction, or the heal requests.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "pg/error.hpp"
#include "pg/postgres.hpp"
#include "registry/registry.hpp"
#include "worker/back_offs.hpp"

extern "C" {
#include "datatype/timestamp.h"
}

namespace partheal::worker {

// A registered table as the round's look sees it: opened and locked ACCESS
// SHARE (never waiting: a table busy with DDL is looked at next round), in
// a subtransaction rolled back after the look, so its locks go at once.
struct Look {
  Oid relid;
  Relation rel;
  const registry::ManagedTable& table;
  // A Citus worker node's copy of a coordinator's registration: its DDL is
  // the coordinator's, so no job retires or drains it here.
  bool coordinators_own;
};

// What a step did, and so what the scheduler does next with the table.
enum class Outcome {
  kDone,      // this round's work for the table is done
  kMore,      // one unit done; the table takes another step this round, after the others
  kGaveWay,   // the table was busy: tried again next round
  kFailed,    // backed off: 1 s, doubling to a minute (the window, or the whole table)
  kTooBig,    // the window is backed off a minute at once
  kNextTime,  // nothing to do now
};

struct StepResult {
  Outcome outcome = Outcome::kNextTime;
  back_offs::Window window;  // the window the step worked on; none: the table
  bool progress = false;     // something made, moved or dropped: the next round comes soon
  bool again_now = false;    // step again at once (a held-back window may move now)
};

// What a job remembers of a table between rounds. The scheduler owns it,
// and frees it when the table's registration goes.
struct Memo {
  virtual ~Memo() = default;
};

class Schedule;

class Job {
 public:
  virtual ~Job() = default;
  // What pg_stat_activity shows while a step runs.
  virtual const char* activity() const = 0;
  // Whether the job runs this round (a GUC may turn it off).
  virtual bool enabled() const { return true; }
  // In the round's look at each registered table: whether the table is due.
  virtual bool due(const Look& look, Schedule& s) = 0;
  // The look at the table failed in this job's due(), or went through.
  virtual void look_failed(Oid relid, const PgError& e, Schedule& s) {
    (void)relid, (void)e, (void)s;
  }
  virtual void looked(Oid relid, Schedule& s) { (void)relid, (void)s; }
  // Before the job's first step of a round.
  virtual void round_begins(Schedule& s) { (void)s; }
  // The steps a due table may take this round.
  virtual int most_steps(Oid relid, Schedule& s) {
    (void)relid, (void)s;
    return 1;
  }
  // The job's round ends after the pass in which its steps took this long
  // (ms); 0: every table takes its steps.
  virtual long round_budget_ms() const { return 0; }
  // One step for the table, inside a transaction of the scheduler's. A
  // PgError aborts it, and reaches settle().
  virtual void step(Oid relid, Schedule& s) = 0;
  // After the step's transaction ended: what it did.
  virtual StepResult settle(Oid relid, const std::optional<PgError>& error, Schedule& s) = 0;
};

// What a job sees of the scheduler while it looks, steps or settles.
class Schedule {
 public:
  Oid dboid() const { return dboid_; }
  // The current job's back-offs.
  bool backing_off(Oid relid, const back_offs::Window& window) const;
  void back_off(Oid relid, const back_offs::Window& window, long fixed_ms = 0);
  void clear(Oid relid, const back_offs::Window& window);
  void keep_windows(Oid relid, const std::vector<int64>& keep);
  // The current job's memo of the table, made on first use.
  template <typename T>
  T& memo(Oid relid) {
    std::unique_ptr<Memo>& m = memos_[{job_, relid}];
    if (!m) m = std::make_unique<T>();
    return static_cast<T&>(*m);
  }
  // A step's own wait (outside its transaction) serves heal requests
  // through this, so no heal waits behind it.
  void serve_heals() const;
  // Whether a heal request waits: what a step polls for gives way to it.
  bool heal_waiting() const;
  // The same, read without locks: safe in a signal handler (pg::CancelWhen
  // ends a step's wait with it), and at worst a tick late.
  static bool heal_waiting_now() noexcept;
  // The next round comes at this time at the latest (a clock's window).
  void wake_at(TimestampTz at);
  // A short read of the catalog outside the step (a sample of snapshots),
  // in a transaction of its own.
  std::optional<PgError> read_in_transaction(const std::function<void()>& f);

 private:
  friend struct Round;
  Oid dboid_ = InvalidOid;
  int job_ = 0;
  TimestampTz wake_at_ = 0;
  std::map<std::pair<int, Oid>, std::unique_ptr<Memo>> memos_;
  void keep_memos_of(const std::vector<Oid>& registered);
};

// At _PG_init, in the order their steps run in a round.
void register_job(Job* job);

// What a round did, for the worker's loop.
struct RoundOutcome {
  std::optional<PgError> registrations;  // reading the registrations failed
  bool progress = false;                 // the next round comes soon
  TimestampTz wake_at = 0;               // and at this time at the latest; 0: naptime
};

// One round over the database's registered tables: the look, then each
// job's steps. Counts partheal_workers().rounds when it looked.
RoundOutcome run_round(Oid dboid);

}  // namespace partheal::worker
