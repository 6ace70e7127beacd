#include "drain/window_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "attach/reconcile.hpp"
#include "attach/window.hpp"
#include "drain/default_contents.hpp"
#include "partitions/catalog.hpp"
#include "partitions/child_table.hpp"
#include "partitions/key_space.hpp"
#include "partitions/time_zone.hpp"
#include "pg/boundary.hpp"
#include "pg/own_sql.hpp"
#include "pg/relation.hpp"
#include "pg/security.hpp"
#include "registry/registry.hpp"
#include "registry/table_state.hpp"

extern "C" {
#include "access/relation.h"
#include "utils/timestamp.h"
}

namespace partheal::drain {

namespace {

// Windows a step looks past when the oldest are backing off.
constexpr int kMaxProbes = 8;
// How far back the drain reaches without retention when the registration
// gives no drain_reach, and at most in windows.
constexpr int32 kReachBackDays = 30;
constexpr int64 kMostWindowsBack = 1000;

// What one pass over a table works with: its parent, keys and partitions.
struct Pass {
  Oid relid;
  const attach::Parent& p;
  const partitions::KeySpace& keys;
  const std::vector<partitions::Range>& existing;
  Oid namespace_oid;
  // Whether rows may move now: no transaction holds a snapshot older than
  // the move (or the wait for them is over).
  bool snapshots_gone;
  // The scheduler's back-offs of the table's windows.
  const worker::Schedule& schedule;
  bool backing_off(int64 lower) const { return schedule.backing_off(relid, lower); }
};

// Creates `range`'s window and attaches it with attach_window, moving what
// DEFAULT holds for it. `attempting` is set first: a failing transaction
// backs the window off.
void attach_range(const Pass& pass, const partitions::Range& range, Step& step,
                  std::optional<int64>& attempting) {
  const attach::Parent& p = pass.p;
  Datum lower = key_datum(p.key.type, range.lower.value);
  Datum upper = key_datum(p.key.type, range.upper.value);
  attach::Window w = attach::window_from_values(p, lower, upper);
  step.window = fmt::format("FROM ({}) TO ({})", w.lower_literal, w.upper_literal);
  const int64 rows = rows_in_window(p, lower, upper, kMaxWindowRows);
  if (rows > kMaxWindowRows) {
    step.too_big = range.lower.value;
    return;
  }
  // A REPEATABLE READ transaction whose snapshot is older than the move
  // would miss the rows: planned against the catalog as it is after the
  // move, it prunes DEFAULT for the window, and their copies in the window
  // are newer than its snapshot. So a move waits, outside this
  // transaction, for the snapshots held now to go (default_drain.cpp).
  if (rows > 0 && !pass.snapshots_gone) {
    step.held_back = true;
    step.held_window = step.window;
    return;
  }
  // Named as the heal names it: the lower bound in the table's zone.
  w.suffix = pass.keys.suffix(range.lower);
  std::string name = partitions::free_child_name(pass.namespace_oid, p.name, w.suffix);
  attempting = range.lower.value;
  attach::Result r = attach::attach_window(p, w, name, kBatchRows);
  if (r.outcome == attach::Outcome::kDefaultHoldsRows ||
      r.outcome == attach::Outcome::kNotAttached) {
    step.gave_up = range.lower.value;
    return;
  }
  step.attached = r.outcome == attach::Outcome::kAttached;
  step.attached_lower = range.lower.value;
  step.rows_moved = r.rows_moved;
}

// The oldest window in the band that DEFAULT holds rows for, and is not
// backing off: attached. Whether the probes found one.
bool drain_oldest(const Pass& pass, int64 from, __int128 band_last, Step& step,
                  std::optional<int64>& attempting) {
  for (int probe = 0; probe < kMaxProbes; ++probe) {
    std::optional<int64> key = oldest_key(pass.p, from);
    if (!key || pass.keys.number_of(*key) > band_last) return false;
    partitions::Range range = pass.keys.covering(*key, pass.existing);
    // A window cut at the type's limits (MINVALUE or MAXVALUE) is
    // outside the band; the probe goes on past it.
    if (range.upper.kind != partitions::Bound::Kind::kValue) return false;
    if (range.lower.kind != partitions::Bound::Kind::kValue ||
        pass.backing_off(range.lower.value)) {
      from = range.upper.value;
      continue;
    }
    attach_range(pass, range, step, attempting);
    return true;
  }
  return false;
}

// partheal_stats: the window ahead the worker makes next, and the newest
// upper bound, as the clock's poll shows them for a table without DEFAULT.
void publish_next(const Pass& pass, const partitions::Range& range, registry::NextReason reason,
                  int64 at) {
  const partitions::KeySpec& spec = pass.keys.spec();
  registry::KeyFormat format = spec.date_key ? registry::KeyFormat::kDate
                               : spec.zoned  ? registry::KeyFormat::kTimestamptz
                                             : registry::KeyFormat::kTimestamp;
  std::optional<partitions::Bound> newest;
  if (!pass.existing.empty()) newest = pass.existing.back().upper;
  registry::set_newest_upper(pass.relid, newest, format);
  registry::set_next(pass.relid, reason, range.lower.value, range.upper.value, at);
}

// Windows ahead, from now's through premake after it, as the clock keeps
// them on a table without a DEFAULT: the first one missing is attached.
// Its attach scans DEFAULT under the attach's locks, as every ATTACH past a
// DEFAULT does, and finds nothing to move when DEFAULT is drained.
void make_one_ahead(const Pass& pass, __int128 at, __int128 last, Step& step,
                    std::optional<int64>& attempting) {
  for (__int128 n = at; n <= last; ++n) {
    int64 first = 0;
    if (!pass.keys.first_key_of(static_cast<int64>(n), &first)) return;
    bool made = false;
    for (const partitions::Range& r : pass.existing)
      if (partitions::contains(r, first)) made = true;
    if (made) continue;
    partitions::Range range = pass.keys.covering(first, pass.existing);
    if (range.lower.kind != partitions::Bound::Kind::kValue ||
        range.upper.kind != partitions::Bound::Kind::kValue)
      return;
    publish_next(pass, range, registry::NextReason::kMissing, range.lower.value);
    if (pass.backing_off(range.lower.value)) return;
    attach_range(pass, range, step, attempting);
    step.ahead = step.attached;
    return;
  }
  // All made: the next one is needed when the clock reaches the window
  // after now's.
  int64 next_start = 0;
  if (!pass.keys.first_key_of(static_cast<int64>(at + 1), &next_start)) return;
  partitions::Range next = pass.keys.window(static_cast<int64>(last + 1));
  if (next.lower.kind == partitions::Bound::Kind::kValue &&
      next.upper.kind == partitions::Bound::Kind::kValue)
    publish_next(pass, next, registry::NextReason::kAtTime, next_start);
}

}  // namespace

// Inside the worker's transaction: the oldest window of DEFAULT's rows that
// is not backing off, attached by attach_window; or else, the first window
// ahead not made yet. `attempting` is the lower key of the window being
// attached, for the caller to back off when the transaction fails.
Step drain_one(Oid relid, std::optional<int64>& attempting, bool count_expired, bool snapshots_gone,
               const worker::Schedule& schedule) {
  return pg::with_own_sql({}, [&] {
    Step step;
    // The parent read once for the step: its model, its registration and
    // its windows, from one open.
    Relation rel = attach::open_parent(relid);
    const attach::Parent p = attach::describe_opened(rel);
    registry::TablePtr table = registry::lookup(rel);
    std::vector<partitions::Range> existing;
    const bool drains = OidIsValid(p.default_relid) && !p.default_is_foreign &&
                        !p.default_is_partitioned && table != nullptr && table->drains_default();
    if (drains && table->shape.key_is_time) existing = partitions::attached_ranges(rel);
    pg::guard([&] { relation_close(rel, NoLock); });
    if (!drains) return step;
    const partitions::KeySpace keys = table->key_space();
    // Anyone who can put a row in DEFAULT (an INSERT grant, a
    // cross-partition UPDATE, pg_write_all_data) chooses its key, and rows
    // cannot be traced to who wrote them: so the worker makes windows only
    // from its reach back (below) to premake after now's, and the catalog
    // cannot be grown without bound. Rows outside stay in DEFAULT, where
    // readers see them, for the owner's partheal_partition_data.
    const int64 now = pg::guard([] { return GetCurrentTimestamp(); });
    const __int128 at = keys.number_of(keys.key_at(now + partitions::clock_offset(keys, now)));
    const __int128 band_last = at + table->config.premake;
    const registry::Config& c = table->config;
    // Back: late rows (a pipeline days behind, a window that closed while
    // its rows were still in DEFAULT) are drained back to the retention
    // horizon's window when the table has retention, else to now minus the
    // registration's drain_reach (30 days unless given), counted in the
    // table's zone as retention is; never fewer than premake windows, nor
    // more than 1,000.
    __int128 lowest = at - c.premake;
    std::optional<int64> horizon;
    if (c.has_retention())
      horizon = partitions::key_before_now(keys, c.time_zone.c_str(), c.retention_months,
                                           c.retention_days, c.retention_us, now);
    const int64 reach_back_key =
        horizon ? *horizon
        : c.has_drain_reach()
            ? partitions::key_before_now(keys, c.time_zone.c_str(), c.drain_reach_months,
                                         c.drain_reach_days, c.drain_reach_us, now)
            : partitions::key_before_now(keys, c.time_zone.c_str(), 0, kReachBackDays, 0, now);
    lowest = std::min(lowest, static_cast<__int128>(keys.number_of(reach_back_key)));
    lowest = std::max(lowest, at - kMostWindowsBack);
    int64 from = keys.spec().min;
    int64 first = 0;
    if (keys.first_key_of(static_cast<int64>(lowest), &first)) from = Max(from, first);
    // Nor windows retention would drop at once: rows older than the window
    // holding the horizon stay in DEFAULT, where partheal never drops them.
    bool past_horizon = false;
    if (horizon && keys.first_key_of(keys.number_of(*horizon), &first) && first >= from) {
      from = first;
      past_horizon = true;
    }
    // The rows older than the reach are counted, as the owner, below.
    int64 expired_below = 0;
    if (count_expired && from > keys.spec().min) {
      expired_below = from;
      step.horizon_key = keys.key_text(from);
      step.past_horizon = past_horizon;
    }
    const Pass pass{relid, p, keys, existing, p.namespace_oid, snapshots_gone, schedule};
    // As the owner: the look into DEFAULT and the attach are the owner's
    // business, not the worker's superuser's.
    pg::as_role(p.owner, [&] {
      if (!step.horizon_key.empty()) step.expired = rows_below(p, expired_below, kExpiredCap);
      // A window held back for older snapshots holds up no window ahead.
      if (drain_oldest(pass, from, band_last, step, attempting) && !step.held_back) return;
      // Create-ahead's windows, when the table has it.
      if (table->config.mark_percent != 0) make_one_ahead(pass, at, band_last, step, attempting);
    });
    return step;
  });
}

}  // namespace partheal::drain
