#include "retention/retire_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "attach/window.hpp"
#include "partitions/catalog.hpp"
#include "partitions/key_space.hpp"
#include "partitions/parent.hpp"
#include "pg/boundary.hpp"
#include "pg/cancel_when.hpp"
#include "pg/own_sql.hpp"
#include "pg/relation.hpp"
#include "pg/security.hpp"
#include "pg/top_level.hpp"
#include "registry/registry.hpp"
#include "retention/horizon.hpp"
#include "settings.hpp"

extern "C" {
#include "access/relation.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

namespace partheal::retention {

namespace {

// What one step reads of the table, under ACCESS SHARE.
struct Table {
  Oid relid = InvalidOid;
  // The parent's model (attach/window.hpp), read once a step, when the step
  // acts on a window: a batch, a FINALIZE or a detach all share it.
  mutable std::optional<attach::Parent> model;
  const attach::Parent& parent() const {
    if (!model) model = attach::describe_parent(relid);
    return *model;
  }
  registry::TablePtr registration;
  std::vector<partitions::Partition> parts;
  std::optional<partitions::Partition> pending;
  std::optional<retention::RetentionHorizon> horizon;
  std::optional<partitions::KeySpace> keys;

  Retired said(const partitions::Partition& part) const {
    Retired r;
    r.label = pg::relation_label(part.relid);
    r.bounds = fmt::format("FOR VALUES FROM ({}) TO ({})", keys->bound_sql(part.range.lower),
                           keys->bound_sql(part.range.upper));
    std::optional<int64> h = horizon->of(part.range);
    r.horizon = h ? keys->key_text(*h) : std::string("none");
    return r;
  }
  bool due(const partitions::Partition& part) const {
    std::optional<int64> h = horizon->of(part.range);
    return h && part.range.upper.kind == partitions::Bound::Kind::kValue &&
           part.range.upper.value <= *h;
  }
  void describe(const partitions::Partition& part, Step& step) const {
    step.tried = true;
    step.partition = part.relid;
    Retired r = said(part);
    step.label = r.label;
    step.bounds = r.bounds;
    step.horizon = r.horizon;
  }
};

// Never waits for the table: busy with DDL, it is looked at next round.
// Nor for the sequence: held by ALTER SEQUENCE, it is read next round.
// False when there is nothing to look at.
bool read_table(Oid relid, BackOffs& back_offs, Table& t) {
  const bool locked = pg::guard([&] { return ConditionalLockRelationOid(relid, AccessShareLock); });
  if (!locked) return false;
  t.relid = relid;
  Relation rel = pg::open_existing(relid, NoLock);
  t.registration = registry::lookup(rel);
  const bool retains = t.registration != nullptr && t.registration->config.retains();
  if (retains) {
    partitions::Windows windows = partitions::read_windows(rel);
    t.parts = std::move(windows.attached);
    t.pending = windows.pending;
  }
  const Oid owner = rel->rd_rel->relowner;
  pg::guard([&] { relation_close(rel, NoLock); });
  if (!retains) return false;
  // The back-offs of windows no longer in the table (retired by a batch,
  // dropped by hand) go: each may hold lists of transactions.
  std::vector<Oid> present;
  for (const partitions::Partition& p : t.parts) present.push_back(p.relid);
  if (t.pending) present.push_back(t.pending->relid);
  back_offs.keep_only(present);
  t.keys = t.registration->key_space();
  t.horizon = retention::retention_horizon(*t.registration, owner, false);
  return t.horizon->any();
}

// A DETACH CONCURRENTLY that stopped between its transactions, partheal's
// or anyone's, is completed first: PostgreSQL allows one per table, and its
// partition is out of the table already. Dropped only when due.
void finalize_pending(BackOffs& back_offs, const Table& t, Step& step,
                      std::optional<Attempt>& attempting, bool* gave_way_to_heal) {
  const registry::Config& c = t.registration->config;
  t.describe(*t.pending, step);
  step.finalized = true;
  attempting = Attempt{t.pending->relid, true, back_offs.early(t.pending->relid)};
  step.due = t.due(*t.pending);
  step.keep = c.retention_keep_table;
  step.drop = step.due && !c.retention_keep_table &&
              back_offs.watch.drop_failures.count(t.pending->relid) == 0;
  const attach::Parent& p = t.parent();
  const Oid partition = t.pending->relid;
  pg::as_role(p.owner, [&] {
    step.top_level_sql =
        prepare_finalize(p, partition, &worker::Schedule::heal_waiting_now, gave_way_to_heal);
  });
  step.owner = p.owner;
}

// The oldest due window that is not backing off, detached (and dropped) as
// the owner, as the heal's DDL runs: a DROP's event triggers and
// dependency checks are the owner's business. Not due, a partition is
// passed over, not the end of the look: on the Citus coordinator each
// worker node's range has its own horizon.
void detach_oldest(BackOffs& back_offs, const Table& t, Step& step,
                   std::optional<Attempt>& attempting) {
  const registry::Config& c = t.registration->config;
  auto give_way = [&back_offs] { return back_offs.s.heal_waiting(); };
  for (const partitions::Partition& part : t.parts) {
    if (!t.due(part) || back_offs.backing_off(part.relid)) continue;
    t.describe(part, step);
    const Oid partition = part.relid;
    step.foreign = pg::guard([&] { return get_rel_relkind(partition) == RELKIND_FOREIGN_TABLE; });
    if (step.foreign) return;
    const attach::Parent& p = t.parent();
    attempting = Attempt{part.relid, false, back_offs.early(part.relid)};
    pg::as_role(p.owner, [&] {
      step.result = detach_partition(p, partition, c.retention_keep_table, give_way);
    });
    step.owner = p.owner;
    step.keep = c.retention_keep_table;
    if (step.result.outcome == DetachOutcome::kConcurrent) {
      step.concurrent = true;
      step.top_level_sql = step.result.concurrent_sql;
      step.drop = !step.keep;
    }
    return;
  }
}

// Inside the step's transaction, under SPI: the choice, and what it runs
// there.
void retire_one(Oid relid, BackOffs& back_offs, Step& step, std::optional<Attempt>& attempting,
                bool* gave_way_to_heal) {
  pg::with_own_sql({}, [&] {
    Table t;
    if (!read_table(relid, back_offs, t)) return;
    // While a pending detach waits (backing off, or still running
    // elsewhere), a table behind its horizon goes on in batches: a plain
    // DETACH of another partition is allowed next to a pending one, DETACH
    // CONCURRENTLY not. A DETACH CONCURRENTLY still waiting in its second
    // transaction holds no lock: its own end completes it.
    const bool pending_waits =
        t.pending && (back_offs.backing_off(t.pending->relid) || detach_running_elsewhere());
    if (t.pending && !pending_waits) {
      finalize_pending(back_offs, t, step, attempting, gave_way_to_heal);
      return;
    }
    // Behind by more than two: the due ones that may go together go in one
    // hold (retention/batches.hpp), rather than one a round.
    std::vector<const partitions::Partition*> due_now;
    for (const partitions::Partition& part : t.parts)
      if (t.due(part) && !back_offs.backing_off(part.relid)) due_now.push_back(&part);
    const bool keep = t.registration->config.retention_keep_table;
    Batch b =
        try_batch([&t]() -> const attach::Parent& { return t.parent(); }, back_offs.watch, due_now,
                  keep, [&t](const partitions::Partition& part) { return t.said(part); });
    if (!b.retired.empty()) {
      step.tried = true;
      step.keep = keep;
      step.batch = b;
      return;
    }
    if (!b.one_at_a_time || pending_waits) return;
    detach_oldest(back_offs, t, step, attempting);
  });
}

}  // namespace

void retire_step(Oid relid, BackOffs& back_offs, Step& step, std::optional<Attempt>& attempting,
                 bool* gave_way_to_heal) {
  retire_one(relid, back_offs, step, attempting, gave_way_to_heal);
  if (step.top_level_sql.empty()) return;
  // Outside SPI and partheal's GUC level, which retire_one has left: DETACH
  // CONCURRENTLY commits its first transaction itself.
  step.ran_top_level = true;
  TimestampTz first_commit = 0;
  pg::as_role_across_transactions(step.owner, [&] {
    // Its waits for older transactions give way to a heal request at once:
    // the scheduler serves it, then the window is retried.
    pg::CancelWhen heals(&worker::Schedule::heal_waiting_now, gave_way_to_heal);
    first_commit = pg::run_top_level(step.top_level_sql, settings::detach_wait_lock_timeout_ms(),
                                     settings::detach_wait_budget_ms());
  });
  if (step.concurrent && first_commit != 0)
    step.result.parent_held_ms =
        TimestampDifferenceMilliseconds(step.result.held_since, first_commit);
  // In the command's last transaction, which holds the window ACCESS
  // EXCLUSIVE: a DROP that fails takes that transaction back, and the
  // detach is left pending for FINALIZE.
  if (step.drop) {
    const Oid partition = step.partition;
    const Oid owner = step.owner;
    pg::with_own_sql({}, [&] { pg::as_role(owner, [&] { drop_detached(partition); }); });
  }
  step.result.outcome = step.drop ? DetachOutcome::kDropped : DetachOutcome::kDetached;
}

}  // namespace partheal::retention
