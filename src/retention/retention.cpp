#include "retention/retention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "attach/detach.hpp"
#include "attach/window.hpp"
#include "errors.hpp"
#include "partitions/catalog.hpp"
#include "partitions/key_space.hpp"
#include "partitions/time_zone.hpp"
#include "pg/boundary.hpp"
#include "pg/cancel_when.hpp"
#include "pg/citus.hpp"
#include "pg/own_sql.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "pg/security.hpp"
#include "pg/sequence.hpp"
#include "pg/top_level.hpp"
#include "registry/registry.hpp"
#include "registry/retention_horizon.hpp"
#include "registry/table_state.hpp"
#include "retention/back_off.hpp"
#include "retention/batches.hpp"
#include "settings.hpp"
#include "worker/requests.hpp"
#include "worker/transaction.hpp"

extern "C" {
#include "access/relation.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

namespace partheal::retention {

namespace {

// Windows left attached for as long as they are referenced or foreign,
// said once and looked at again once a minute.
std::set<std::pair<Oid, Oid>>& said_left() {
  static auto* s = new std::set<std::pair<Oid, Oid>>();
  return *s;
}
std::map<Oid, std::string>& last_errors() {
  static auto* m = new std::map<Oid, std::string>();
  return *m;
}
// Windows whose DROP failed after their detach had committed, or in the
// same transaction as their FINALIZE: completed next without the DROP, and
// kept as plain tables, so that the table's retention goes on.
std::map<std::pair<Oid, Oid>, std::string>& drop_failures() {
  static auto* m = new std::map<std::pair<Oid, Oid>, std::string>();
  return *m;
}

// The worker's own user, put back when this goes: a plain setter, which
// cannot fail.
struct RestoreUser {
  Oid user = InvalidOid;
  int context = 0;
  RestoreUser() { GetUserIdAndSecContext(&user, &context); }
  void put_back() const { SetUserIdAndSecContext(user, context); }
  ~RestoreUser() { put_back(); }
};

struct Step {
  bool tried = false;
  Batch batch;  // detached together (and dropped), in one hold
  Oid partition = InvalidOid;
  std::string label;   // the window's table
  std::string bounds;  // FOR VALUES FROM (...) TO (...)
  std::string horizon;
  bool foreign = false;
  bool finalized = false;     // a pending DETACH CONCURRENTLY completed (FINALIZE)
  bool concurrent = false;    // DETACH CONCURRENTLY run, its DROP to follow
  bool keep = false;          // retention_keep_table
  bool due = true;            // false: a pending detach of a window inside the period
  bool drop = false;          // the top-level command's DROP follows in its transaction
  std::string top_level_sql;  // DETACH CONCURRENTLY or FINALIZE, run outside SPI
  bool ran_top_level = false;
  Oid owner = InvalidOid;
  attach::DetachResult result;
};

struct Attempt {
  Oid partition = InvalidOid;
  bool finalize = false;  // of a pending detach
  bool early = false;     // before its back-off ran out: what it gave way to is gone
};

// Inside the worker's transaction: the oldest due window of the table that
// is not backing off or left for good, detached (and dropped). `attempting`
// names it as soon as it is chosen, for an error to back off.
Step retire_one(Oid relid, std::optional<Attempt>& attempting, bool* gave_way_to_heal) {
  return pg::with_own_sql({}, [&] {
    Step step;
    // Never waits for the table: busy with DDL, it is looked at next poll.
    const bool locked =
        pg::guard([&] { return ConditionalLockRelationOid(relid, AccessShareLock); });
    if (!locked) return step;
    Relation rel = pg::open_existing(relid, NoLock);
    registry::TablePtr table = registry::lookup(rel);
    const bool retains = table != nullptr && table->config.retains();
    std::vector<partitions::Partition> parts;
    std::optional<partitions::Partition> pending;
    if (retains) {
      parts = partitions::attached_partitions(rel);
      pending = partitions::pending_detach(rel);
    }
    const Oid owner = rel->rd_rel->relowner;
    pg::guard([&] { relation_close(rel, NoLock); });
    if (!retains) return step;
    // The back-offs of windows no longer in the table (retired by a batch,
    // dropped by hand) go: each may hold lists of transactions.
    auto present = [&](Oid partition) {
      return (pending && pending->relid == partition) ||
             std::any_of(parts.begin(), parts.end(),
                         [&](const partitions::Partition& p) { return p.relid == partition; });
    };
    forget_back_offs_of_windows(relid, present);
    const registry::Config& c = table->config;
    const partitions::KeySpace keys = table->key_space();
    // Never waits for the sequence: held by ALTER SEQUENCE, it is read next
    // poll.
    const registry::RetentionHorizon horizon = registry::retention_horizon(*table, owner, false);
    if (!horizon.any()) return step;
    auto said = [&](const partitions::Partition& part) {
      Retired r;
      r.label = pg::relation_label(part.relid);
      r.bounds = fmt::format("FOR VALUES FROM ({}) TO ({})", keys.bound_sql(part.range.lower),
                             keys.bound_sql(part.range.upper));
      std::optional<int64> h = horizon.of(part.range);
      r.horizon = h ? keys.key_text(*h) : std::string("none");
      return r;
    };
    auto describe = [&](const partitions::Partition& part) {
      step.tried = true;
      step.partition = part.relid;
      Retired r = said(part);
      step.label = r.label;
      step.bounds = r.bounds;
      step.horizon = r.horizon;
    };
    auto due = [&](const partitions::Partition& part) {
      std::optional<int64> h = horizon.of(part.range);
      return h && part.range.upper.kind == partitions::Bound::Kind::kValue &&
             part.range.upper.value <= *h;
    };
    // A DETACH CONCURRENTLY that stopped between its transactions, partheal's
    // or anyone's, is completed first: PostgreSQL allows one per table, and
    // its partition is out of the table already. Dropped only when due.
    // While it waits (backing off, or still running elsewhere), a table
    // behind its horizon goes on in batches: a plain DETACH of another
    // partition is allowed next to a pending one, DETACH CONCURRENTLY not.
    // A DETACH CONCURRENTLY still waiting in its second transaction holds
    // no lock: its own end completes it.
    const bool pending_waits =
        pending && (backing_off(relid, pending->relid) || attach::detach_running_elsewhere());
    if (pending && !pending_waits) {
      describe(*pending);
      step.finalized = true;
      attempting = Attempt{pending->relid, true, early(relid, pending->relid)};
      step.due = due(*pending);
      step.keep = c.retention_keep_table;
      step.drop = step.due && !c.retention_keep_table &&
                  drop_failures().count({relid, pending->relid}) == 0;
      attach::Parent p = attach::describe_parent(relid);
      const Oid partition = pending->relid;
      pg::as_role(p.owner, [&] {
        step.top_level_sql =
            attach::prepare_finalize(p, partition, &worker::heal_request_waiting, gave_way_to_heal);
      });
      step.owner = p.owner;
      return step;
    }
    auto give_way = [] { return worker::heal_requests_pending(MyDatabaseId); };
    // Behind by more than two: the due ones that may go together go in one
    // hold (retention/batches.hpp), rather than one a round.
    std::vector<const partitions::Partition*> due_now;
    for (const partitions::Partition& part : parts)
      if (due(part) && !backing_off(relid, part.relid)) due_now.push_back(&part);
    Batch b = try_batch(relid, due_now, c.retention_keep_table, said);
    if (!b.retired.empty()) {
      step.tried = true;
      step.keep = c.retention_keep_table;
      step.batch = b;
      return step;
    }
    if (!b.one_at_a_time) return step;
    if (pending_waits) return step;
    // Not due, a partition is passed over, not the end of the look: on the
    // Citus coordinator each worker node's range has its own horizon.
    for (const partitions::Partition& part : parts) {
      if (!due(part)) continue;
      if (backing_off(relid, part.relid)) continue;
      describe(part);
      const Oid partition = part.relid;
      step.foreign = pg::guard([&] { return get_rel_relkind(partition) == RELKIND_FOREIGN_TABLE; });
      if (step.foreign) return step;
      attach::Parent p = attach::describe_parent(relid);
      attempting = Attempt{part.relid, false, early(relid, part.relid)};
      // As the owner, as the heal's DDL runs: a DROP's event triggers and
      // dependency checks are the owner's business.
      pg::as_role(p.owner, [&] {
        step.result = attach::detach_partition(p, partition, c.retention_keep_table, give_way);
      });
      step.owner = p.owner;
      step.keep = c.retention_keep_table;
      if (step.result.outcome == attach::DetachOutcome::kConcurrent) {
        step.concurrent = true;
        step.top_level_sql = step.result.concurrent_sql;
        step.drop = !step.keep;
      }
      return step;
    }
    return step;
  });
}

void say_left(Oid relid, const Step& step, const std::string& why, const std::string& hint) {
  pg::report(LOG, 0,
             fmt::format("{} retention left {} {} attached to {}: {}", errors::kLogRetentionLeft,
                         step.label, step.bounds, pg::relation_label(relid), why),
             {fmt::format("Its upper bound is at or before the horizon, {}.", step.horizon), hint});
}

}  // namespace

bool retire_due_windows(Oid dboid, const std::vector<Oid>& tables) {
  std::optional<PgError> error;
  // Back-offs and reports of tables no longer retained go; a window dropped
  // by hand meanwhile leaves an entry until its table goes.
  auto retained = [&](Oid relid) {
    return std::find(tables.begin(), tables.end(), relid) != tables.end();
  };
  forget_back_offs_of_tables(retained);
  for (auto it = said_left().begin(); it != said_left().end();)
    it = retained(it->first) ? std::next(it) : said_left().erase(it);
  for (auto it = last_errors().begin(); it != last_errors().end();)
    it = retained(it->first) ? std::next(it) : last_errors().erase(it);
  for (auto it = drop_failures().begin(); it != drop_failures().end();)
    it = retained(it->first.first) ? std::next(it) : drop_failures().erase(it);
  forget_batches(retained);
  bool any = false;
  // A table whose batch went is looked at again at once, up to
  // kBatchesPerRound times a round: a backlog goes a batch after another,
  // heal requests served between them.
  std::vector<Oid> order(tables);
  std::map<Oid, int> batches_this_round;
  for (size_t at = 0; at < order.size(); ++at) {
    const Oid relid = order[at];
    worker::serve_heal_requests(dboid);
    Step step;
    std::optional<Attempt> attempting;
    bool gave_way_to_heal = false;
    // The abort of a transaction a top-level command began puts back the
    // user that transaction began with, the owner's: the worker's own is put
    // back after every abort, whatever ended the transaction.
    RestoreUser worker_user;
    try {
      error = worker::in_transaction(
          [&] {
            step = retire_one(relid, attempting, &gave_way_to_heal);
            if (step.top_level_sql.empty()) return;
            // Outside SPI and partheal's GUC level, which retire_one has left:
            // DETACH CONCURRENTLY commits its first transaction itself.
            step.ran_top_level = true;
            TimestampTz first_commit = 0;
            pg::as_role_across_transactions(step.owner, [&] {
              // Its waits for older transactions give way to a heal
              // request at once: the worker serves it, then retries.
              pg::CancelWhen heals(&worker::heal_request_waiting, &gave_way_to_heal);
              first_commit =
                  pg::run_top_level(step.top_level_sql, settings::detach_wait_lock_timeout_ms(),
                                    settings::detach_wait_budget_ms());
            });
            if (step.concurrent && first_commit != 0)
              step.result.parent_held_ms =
                  TimestampDifferenceMilliseconds(step.result.held_since, first_commit);
            // In the command's last transaction, which holds the window ACCESS
            // EXCLUSIVE: a DROP that fails takes that transaction back, and
            // the detach is left pending for FINALIZE.
            if (step.drop) {
              const Oid partition = step.partition;
              const Oid owner = step.owner;
              pg::with_own_sql(
                  {}, [&] { pg::as_role(owner, [&] { attach::drop_detached(partition); }); });
            }
            step.result.outcome =
                step.drop ? attach::DetachOutcome::kDropped : attach::DetachOutcome::kDetached;
          },
          "partheal: retention");
    } catch (...) {
      worker::detail::abort(true);
      throw;
    }
    worker_user.put_back();
    if (error && step.ran_top_level) {
      // DETACH CONCURRENTLY's first transaction, committed, may have left
      // the partition detach-pending: out of the table, completed by
      // FINALIZE at a later poll. A DROP that failed otherwise than by
      // waiting is left out of it then.
      const int code = error->sqlerrcode();
      const bool waited = waited_for(code);
      if (!waited && step.drop) drop_failures()[{relid, step.partition}] = error->what();
      if (last_errors()[relid] != error->what()) {
        last_errors()[relid] = error->what();
        pg::report(
            LOG, code,
            fmt::format("{} retention's {} of {} from {} stopped: {}", errors::kLogRetentionLeft,
                        step.concurrent ? "DETACH CONCURRENTLY" : "FINALIZE", step.label,
                        pg::relation_label(relid), error->what()),
            {gave_way_to_heal ? "It gave way to a heal request, which the worker serves first."
             : waited         ? "A transaction that used the table was older than the detach."
                              : "",
             "partheal completes the detach (FINALIZE) at a later poll, backing off."});
      }
      stopped(relid, step.partition, waited, attempting && attempting->early);
      if (gave_way_to_heal) worker::serve_heal_requests(dboid);
      continue;
    }
    if (error) {
      if (last_errors()[relid] != error->what()) {
        last_errors()[relid] = error->what();
        pg::report(
            LOG, error->sqlerrcode(),
            fmt::format("{} retention of {} failed: {}", errors::kLogRetentionLeft,
                        pg::relation_label(relid), error->what()),
            {gave_way_to_heal ? "It gave way to a heal request, which the worker serves first."
                              : "",
             ""});
      }
      // FINALIZE's own locks, on the parent and the window, gave way
      // (retire_one took them within the attach budget): as after its wait.
      if (attempting)
        stopped(relid, attempting->partition,
                attempting->finalize && waited_for(error->sqlerrcode()), attempting->early);
      if (gave_way_to_heal) worker::serve_heal_requests(dboid);
      continue;
    }
    if (!step.tried) continue;
    if (!step.batch.retired.empty()) {
      any = true;
      if (++batches_this_round[relid] < kBatchesPerRound)
        order.insert(order.begin() + static_cast<std::ptrdiff_t>(at) + 1, relid);
      say_batch(relid, step.batch, step.keep);
      continue;
    }
    // Completed without the DROP that had failed: said, and kept.
    auto failed_drop = drop_failures().find({relid, step.partition});
    if (step.finalized && failed_drop != drop_failures().end()) {
      pg::report(LOG, 0,
                 fmt::format("{} retention detached {} {} from {} but could not drop it: {}",
                             errors::kLogRetentionLeft, step.label, step.bounds,
                             pg::relation_label(relid), failed_drop->second),
                 {"It is a plain table now, no longer a partition.", "Drop it yourself."});
      drop_failures().erase(failed_drop);
    }
    last_errors().erase(relid);
    // Left while referenced or foreign: looked at again in a minute, said
    // once.
    auto leave = [&](const std::string& why, const std::string& hint) {
      back_off_for_a_minute(relid, step.partition);
      if (said_left().insert({relid, step.partition}).second) say_left(relid, step, why, hint);
    };
    if (step.foreign) {
      leave("it is a foreign table", "Detach and drop it yourself when its data may go.");
      continue;
    }
    switch (step.result.outcome) {
      case attach::DetachOutcome::kDropped:
      case attach::DetachOutcome::kDetached: {
        const bool kept = step.result.outcome == attach::DetachOutcome::kDetached;
        any = true;
        forget_back_off(relid, step.partition);
        said_left().erase({relid, step.partition});
        registry::with_state(relid, [kept](registry::TableState& s) {
          registry::count(kept ? s.detached_windows : s.dropped_windows);
        });
        const std::string how =
            step.finalized ? "completed a pending DETACH CONCURRENTLY (FINALIZE)"
            : step.concurrent
                ? fmt::format(
                      "detached it concurrently: the parent was held for {} ms up to its first "
                      "commit in SHARE UPDATE EXCLUSIVE, against neither writers nor readers",
                      step.result.parent_held_ms)
                : fmt::format("the parent was locked for {} ms", step.result.parent_held_ms);
        pg::report(
            LOG, 0,
            fmt::format("{} retention detached {} {} from {}{}: its upper bound is {} "
                        "the horizon, {}; {}",
                        errors::kLogRetired, step.label, step.bounds, pg::relation_label(relid),
                        kept ? " and kept it as a table" : " and dropped it",
                        step.due ? "at or before" : "after", step.horizon, how));
        break;
      }
      case attach::DetachOutcome::kReferenced:
        leave(step.result.reason,
              "Drop the foreign keys that reference the table, and partheal detaches it within "
              "a minute; or detach it yourself.");
        break;
      case attach::DetachOutcome::kConcurrent:  // run above, and kDetached since
        break;
      case attach::DetachOutcome::kBusy:
        // Gave way to a heal request: served next, and the window is tried
        // again at the worker's next round, which comes at once.
        if (step.result.gave_way) {
          any = true;
          break;
        }
        stopped(relid, step.partition, false, false);
        say_left(relid, step, step.result.reason, "partheal tries again, backing off to a minute.");
        break;
    }
  }
  return any;
}

}  // namespace partheal::retention
