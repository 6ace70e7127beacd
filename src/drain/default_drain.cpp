#include "drain/default_drain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "attach/reconcile.hpp"
#include "attach/window.hpp"
#include "drain/default_contents.hpp"
#include "drain/snapshot_hold.hpp"
#include "errors.hpp"
#include "partitions/catalog.hpp"
#include "partitions/child_table.hpp"
#include "partitions/key_space.hpp"
#include "partitions/time_zone.hpp"
#include "pg/boundary.hpp"
#include "pg/own_sql.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "pg/security.hpp"
#include "pg/spi.hpp"
#include "registry/registry.hpp"
#include "registry/table_state.hpp"
#include "settings.hpp"
#include "worker/requests.hpp"
#include "worker/transaction.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "utils/timestamp.h"
}

namespace partheal::drain {

namespace {

constexpr long kFirstRetryMs = 1000;
constexpr long kMaxRetryMs = 60000;
// One move statement's rows: a window's transaction grows with the window,
// and the bulk move runs under ROW EXCLUSIVE, which blocks no one.
constexpr int64 kBatchRows = 50000;
// Windows a poll looks past when the oldest are backing off.
constexpr int kMaxProbes = 8;
// The most rows of one window the worker moves: a window's move and attach
// are one transaction, and heal requests wait for its end.
constexpr int64 kMaxWindowRows = 100000;

struct BackOff {
  TimestampTz retry_at = 0;
  long retry_ms = 0;
};

// Per (table, window's lower key): a window attach_window gave up on, whose
// attempt failed, or that is too big. Per table: the last error, logged
// when it changes, and the table's own back-off.
std::map<std::pair<Oid, int64>, BackOff>& window_back_offs() {
  static auto* m = new std::map<std::pair<Oid, int64>, BackOff>();
  return *m;
}
struct TableWatch {
  BackOff back_off;
  std::string last_error;
  // Rows DEFAULT keeps past the retention horizon: counted once a minute,
  // said once each time they appear.
  TimestampTz expired_count_at = 0;
  bool expired_said = false;
  SnapshotHold hold;  // a move held back for older snapshots
};

// How often, and how far, the rows past the horizon are counted: a scan of
// DEFAULT under ACCESS SHARE, which no writer waits for, stopped at the cap.
constexpr long kExpiredCountMs = 60000;
constexpr int64 kExpiredCap = 10000;
// How far back the drain reaches without retention when the registration
// gives no drain_reach, and at most in windows.
constexpr int32 kReachBackDays = 30;
constexpr int64 kMostWindowsBack = 1000;
std::map<Oid, TableWatch>& table_watches() {
  static auto* m = new std::map<Oid, TableWatch>();
  return *m;
}

void back_off(BackOff& b) {
  b.retry_ms = b.retry_ms == 0 ? kFirstRetryMs : Min(b.retry_ms * 2, kMaxRetryMs);
  b.retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), b.retry_ms);
}

struct Step {
  bool attached = false;
  bool ahead = false;  // the window attached was one ahead, with nothing to move
  int64 attached_lower = 0;
  int64 rows_moved = 0;
  std::optional<int64> gave_up;  // the window's lower key
  std::optional<int64> too_big;  // the window's lower key
  std::string window;            // FROM (...) TO (...), for messages
  std::optional<int64> expired;  // rows in DEFAULT older than the horizon's window, when counted
  std::string horizon_key;       // the first key of that window, for messages
  bool past_horizon = false;     // that window is the retention horizon's, not the reach's
  bool held_back = false;        // rows to move, not moved: older snapshots may still read them
  std::string held_window;       // FROM (...) TO (...) of that window
};

bool backing_off(Oid relid, int64 lower) {
  auto it = window_back_offs().find({relid, lower});
  return it != window_back_offs().end() &&
         it->second.retry_at > pg::guard([] { return GetCurrentTimestamp(); });
}

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
  // transaction, for the snapshots held now to go (drain_managed_defaults).
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
        backing_off(pass.relid, range.lower.value)) {
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
    if (backing_off(pass.relid, range.lower.value)) return;
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

// Inside the worker's transaction: the oldest window of DEFAULT's rows that
// is not backing off, attached by attach_window; or else, the first window
// ahead not made yet. `attempting` is the lower key of the window being
// attached, for the caller to back off when the transaction fails.
Step drain_one(Oid relid, std::optional<int64>& attempting, bool count_expired,
               bool snapshots_gone) {
  return pg::with_own_sql({}, [&] {
    Step step;
    attach::Parent p = attach::describe_parent(relid);
    if (!OidIsValid(p.default_relid) || p.default_is_foreign || p.default_is_partitioned)
      return step;
    Relation rel = pg::open_existing(relid, AccessShareLock);
    registry::TablePtr table = registry::lookup(rel);
    std::vector<partitions::Range> existing;
    if (table != nullptr && table->shape.key_is_time) existing = partitions::attached_ranges(rel);
    pg::guard([&] { relation_close(rel, NoLock); });
    if (table == nullptr || !table->drains_default()) return step;
    const partitions::KeySpace keys = table->key_space();
    const char* schema = p.schema.c_str();
    Oid namespace_oid = pg::guard([&] { return get_namespace_oid(schema, false); });
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
      horizon = partitions::retention_horizon(keys, c.time_zone.c_str(), c.retention_months,
                                              c.retention_days, c.retention_us, now);
    const int64 reach_back_key =
        horizon ? *horizon
        : c.has_drain_reach()
            ? partitions::retention_horizon(keys, c.time_zone.c_str(), c.drain_reach_months,
                                            c.drain_reach_days, c.drain_reach_us, now)
            : partitions::retention_horizon(keys, c.time_zone.c_str(), 0, kReachBackDays, 0, now);
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
    const Pass pass{relid, p, keys, existing, namespace_oid, snapshots_gone};
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

// The most a poll round waits for older snapshots to go, across its tables:
// a round serves heal requests while it waits, but holds up the other
// tables' upkeep.
constexpr long kSnapshotWaitPerRoundMs = 1000;

// What a pass did that the worker keeps: back-offs, and the counters of
// what it attached.
void settle(Oid relid, TableWatch& watch, const Step& step, bool& attached_any) {
  if (step.gave_up) back_off(window_back_offs()[{relid, *step.gave_up}]);
  if (step.too_big) {
    BackOff& b = window_back_offs()[{relid, *step.too_big}];
    if (b.retry_ms == 0)
      pg::report(LOG, 0,
                 fmt::format("{} the window {} of {} is left in DEFAULT: it holds more than {} "
                             "rows there, more than the worker moves in one transaction",
                             errors::kLogAttachGaveUp, step.window, pg::relation_label(relid),
                             kMaxWindowRows),
                 {{},
                  "Move them with CALL partheal_partition_data(), which commits window by "
                  "window."});
    b.retry_ms = kMaxRetryMs;
    b.retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kMaxRetryMs);
  }
  if (step.attached) {
    attached_any = true;
    const int64 moved = step.rows_moved;
    const bool ahead = step.ahead;
    registry::with_state(relid, [moved, ahead](registry::TableState& s) {
      if (ahead) {
        registry::count(s.ahead_created);
      } else {
        registry::count(s.drained_rows, static_cast<uint64>(moved));
        registry::count(s.drained_windows);
      }
    });
    watch.last_error.clear();
    window_back_offs().erase({relid, step.attached_lower});
  }
}

}  // namespace

bool drain_managed_defaults(Oid dboid, const std::vector<Oid>& tables) {
  // Back-offs of tables no longer polled go.
  std::map<Oid, TableWatch> kept;
  for (Oid relid : tables) {
    auto it = table_watches().find(relid);
    if (it != table_watches().end()) kept.emplace(relid, std::move(it->second));
  }
  table_watches() = std::move(kept);
  for (auto it = window_back_offs().begin(); it != window_back_offs().end();)
    it = std::find(tables.begin(), tables.end(), it->first.first) == tables.end()
             ? window_back_offs().erase(it)
             : std::next(it);

  bool attached_any = false;
  const TimestampTz round_deadline =
      TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kSnapshotWaitPerRoundMs);
  for (Oid relid : tables) {
    TableWatch& watch = table_watches()[relid];
    if (watch.back_off.retry_at > GetCurrentTimestamp()) continue;
    worker::serve_heal_requests(dboid);
    Step step;
    std::optional<int64> attempting;
    bool count_expired = watch.expired_count_at <= GetCurrentTimestamp();
    std::optional<PgError> error;
    // Without partheal.drain_snapshot_wait, rows move at once; with it, a
    // window with rows to move is held back (the first pass, which samples
    // the snapshots older than the move), and moved in a second pass once
    // they have gone (drain/snapshot_hold.hpp).
    bool snapshots_gone = settings::drain_snapshot_wait_ms == 0;
    HoldOutcome released;
    for (;;) {
      pg::SnapshotHolders holders;
      error = worker::in_transaction(
          [&] {
            step = drain_one(relid, attempting, count_expired, snapshots_gone);
            if (step.held_back) holders = pg::snapshot_holders();
          },
          "partheal: moving rows out of DEFAULT");
      if (error || !step.held_back) break;
      released =
          wait_for_snapshots(dboid, round_deadline, watch.hold, holders, relid, step.held_window);
      if (!released.go) break;
      settle(relid, watch, step, attached_any);  // a window ahead the first pass attached
      snapshots_gone = true;
      count_expired = false;
      attempting.reset();
      const std::optional<int64> expired = step.expired;
      const std::string horizon_key = step.horizon_key;
      const bool past_horizon = step.past_horizon;
      step = Step{};
      step.expired = expired;
      step.horizon_key = horizon_key;
      step.past_horizon = past_horizon;
    }
    if (error) {
      // Logged when it changes, not every round. A window whose attach
      // failed backs off on its own, so the windows after it still drain;
      // a failure before any window was chosen backs the table off.
      if (watch.last_error != error->what()) {
        watch.last_error = error->what();
        pg::report(LOG, error->sqlerrcode(),
                   fmt::format("{} the drain of the DEFAULT partition of {} failed: {}",
                               errors::kLogAttachGaveUp, pg::relation_label(relid), error->what()));
      }
      if (attempting)
        back_off(window_back_offs()[{relid, *attempting}]);
      else
        back_off(watch.back_off);
      continue;
    }
    watch.back_off = BackOff{};
    // A hold that ended without a move (the rows went another way) is over.
    if (!step.held_back) hold_over(watch.hold);
    if (step.expired) {
      watch.expired_count_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kExpiredCountMs);
      const int64 expired = *step.expired;
      registry::with_state(relid, [expired](registry::TableState& s) {
        pg_atomic_write_u64(&s.expired_in_default, static_cast<uint64>(expired) + 1);
      });
      if (expired == 0) watch.expired_said = false;
      if (expired > 0 && !watch.expired_said) {
        watch.expired_said = true;
        report_expired(relid, expired, kExpiredCap, step.past_horizon, step.horizon_key);
      }
    }
    settle(relid, watch, step, attached_any);
    if (step.attached && !released.note.empty())
      pg::report(LOG, 0, released.note, {released.detail, {}});
  }
  return attached_any;
}

}  // namespace partheal::drain
