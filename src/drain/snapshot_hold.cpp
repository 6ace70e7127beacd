#include "drain/snapshot_hold.hpp"

#include <fmt/format.h>

#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/pause.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "settings.hpp"

extern "C" {
#include "utils/timestamp.h"
}

namespace partheal::drain {

namespace {

constexpr long kPollMs = 10;
// Past the round's deadline, a table still waits this long: statements
// that merely run now end within it.
constexpr long kLeastWaitMs = 20;
// Samples per wait: each one after the last has let go, so the move
// follows a recent one.
constexpr int kSamples = 3;

const char* kHint =
    "SELECT pid, xact_start, backend_xmin FROM pg_stat_activity WHERE backend_xmin IS NOT NULL "
    "AND datname = current_database() ORDER BY xact_start lists the transactions with "
    "snapshots.";

std::string counted(size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// A fresh sample, in a transaction of its own, without the waived
// transactions (and those of them that let go are forgotten).
std::optional<pg::SnapshotHolders> sample(worker::Schedule& s, SnapshotHold& hold) {
  pg::SnapshotHolders all;
  if (s.read_in_transaction([&] { all = pg::snapshot_holders(); })) return std::nullopt;
  std::vector<VirtualTransactionId> still;
  for (const VirtualTransactionId& w : hold.waived)
    for (const VirtualTransactionId& v : all.vxids)
      if (VirtualTransactionIdEquals(v, w)) still.push_back(w);
  hold.waived = std::move(still);
  return pg::without(all, hold.waived);
}

}  // namespace

void hold_over(SnapshotHold& hold) {
  hold.since = 0;
  hold.said = false;
}

HoldOutcome wait_for_snapshots(worker::Schedule& s, TimestampTz round_deadline, SnapshotHold& hold,
                               pg::SnapshotHolders holders, Oid relid, const std::string& window) {
  holders = pg::without(holders, hold.waived);
  const TimestampTz deadline =
      Max(round_deadline, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kLeastWaitMs));
  int samples = 1;
  for (;;) {
    while (!holders.vxids.empty() && GetCurrentTimestamp() < deadline) {
      s.serve_heals();
      pg::pause_ms(kPollMs);
      holders = pg::still_holding(holders);
    }
    if (!holders.vxids.empty() || samples == kSamples) break;
    std::optional<pg::SnapshotHolders> next = sample(s, hold);
    if (!next) break;  // no sample to be had: the move follows the last one, which let go
    ++samples;
    holders = std::move(*next);
    if (holders.vxids.empty()) break;
  }
  // The first sample binds, as CREATE INDEX CONCURRENTLY's does; the later
  // ones only bring the move closer to a recent one, while the round's wait
  // lasts. So readers whose statements follow each other without a pause
  // (a dashboard, a poll) hold a move back only as long as their statements
  // run, and a transaction that keeps one snapshot holds it until it ends.
  const std::string table = pg::relation_label(relid);
  if (holders.vxids.empty() || samples > 1) {
    HoldOutcome go{true, {}, {}};
    if (hold.said)
      go.note = fmt::format(
          "{} the drain of the DEFAULT partition of {} moved the rows of the window {}: the "
          "transactions with older snapshots had let go of them",
          errors::kLogHeldForSnapshots, table, window);
    hold_over(hold);
    return go;
  }
  const TimestampTz now = GetCurrentTimestamp();
  if (hold.since == 0) hold.since = now;
  const long held_ms = TimestampDifferenceMilliseconds(hold.since, now);
  const size_t n = holders.vxids.size();
  if (held_ms >= settings::drain_snapshot_wait_ms) {
    HoldOutcome go{true,
                   fmt::format("{} the drain of the DEFAULT partition of {} moved the rows "
                               "of the window {} while {} with an older snapshot still {}, "
                               "after waiting {} ms (partheal.drain_snapshot_wait)",
                               errors::kLogHeldForSnapshots, table, window,
                               counted(n, "transaction", "transactions"), "ran", held_ms),
                   "A REPEATABLE READ or SERIALIZABLE transaction among them that selects the "
                   "window by its key does not see the moved rows; one that reads the whole parent "
                   "still sees them in DEFAULT."};
    hold.waived.insert(hold.waived.end(), holders.vxids.begin(), holders.vxids.end());
    hold_over(hold);
    return go;
  }
  if (!hold.said) {
    hold.said = true;
    pg::report(LOG, 0,
               fmt::format("{} the drain of the DEFAULT partition of {} holds back the move of the "
                           "window {} while {} with an older snapshot {}",
                           errors::kLogHeldForSnapshots, table, window,
                           counted(n, "transaction", "transactions"), n == 1 ? "runs" : "run"),
               {fmt::format("A REPEATABLE READ or SERIALIZABLE transaction whose snapshot is older "
                            "than the move would not see the moved rows when it selects their "
                            "window by its key. The drain waits for them, at most "
                            "partheal.drain_snapshot_wait ({} ms); readers see the rows in DEFAULT "
                            "meanwhile.",
                            settings::drain_snapshot_wait_ms),
                kHint});
  }
  return HoldOutcome{};
}

}  // namespace partheal::drain
