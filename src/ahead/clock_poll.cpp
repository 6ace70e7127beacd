#include "ahead/clock_poll.hpp"

#include <optional>

#include "ahead/clock.hpp"
#include "partitions/catalog.hpp"
#include "partitions/ensure_covering.hpp"
#include "partitions/time_zone.hpp"
#include "pg/boundary.hpp"
#include "registry/table_state.hpp"

extern "C" {
#include "access/relation.h"
#include "storage/lmgr.h"
#include "utils/timestamp.h"
}

namespace partheal::ahead {

namespace {

// The first key of `plan` that no partition takes (a table with a DEFAULT
// partition is not polled by the clock: partheal makes nothing for it).
std::optional<int64> first_missing(Relation rel, const ClockPlan& plan) {
  for (int64 key : plan.keys)
    if (!partitions::routes(rel, key)) return key;
  return std::nullopt;
}

// partheal_stats: the newest window's upper bound, and what comes next.
void publish(Relation rel, const partitions::KeySpace& keys, const ClockPlan& plan,
             std::optional<int64> missing) {
  const Oid relid = RelationGetRelid(rel);

  const partitions::KeySpec& spec = keys.spec();
  registry::KeyFormat format = spec.date_key ? registry::KeyFormat::kDate
                               : spec.zoned  ? registry::KeyFormat::kTimestamptz
                                             : registry::KeyFormat::kTimestamp;
  registry::set_newest_upper(relid, partitions::newest_upper(rel), format);
  auto window = [&](int64 n, registry::NextReason reason, int64 at) {
    partitions::Range r = keys.window(n);
    auto value = [&](const partitions::Bound& b, int64 otherwise) {
      return b.kind == partitions::Bound::Kind::kValue ? b.value : otherwise;
    };
    registry::set_next(relid, reason, value(r.lower, keys.spec().min),
                       value(r.upper, keys.spec().max), at);
  };
  if (missing) {
    window(keys.number_of(*missing), registry::NextReason::kMissing, *missing);
    return;
  }
  window(plan.last + 1, registry::NextReason::kAtTime,
         keys.key_at(plan.wake_at + partitions::clock_offset(keys, plan.wake_at)));
}

}  // namespace

void poll_by_clock(Relation rel, const registry::ManagedTable& table, std::vector<Watched>& watched,
                   int64& wake_at) {
  const Oid relid = RelationGetRelid(rel);
  if (table.config.mark_percent == 0) {
    registry::set_next(relid, registry::NextReason::kOff);
    return;
  }
  const partitions::KeySpace keys = table.key_space();
  const int64 now = GetCurrentTimestamp();
  const ClockPlan plan = plan_by_clock(keys, table.config.premake, table.config.mark_percent, now,
                                       partitions::clock_offset(keys, now));
  std::optional<int64> missing = first_missing(rel, plan);
  publish(rel, keys, plan, missing);
  if (wake_at == 0 || plan.wake_at < wake_at) wake_at = plan.wake_at;
  if (!missing) return;
  Watched w{};
  w.relid = relid;
  w.mark_percent = table.config.mark_percent;
  w.key_max = table.shape.key_max;
  w.headroom = table.config.premake + 1;  // the catch-up's budget per round
  w.by_clock = true;
  w.premake = table.config.premake;
  w.spec = keys.spec();
  watched.push_back(w);
}

partitions::Ensured ensure_next_by_clock(const Watched& w) {
  // Never waiting: DDL under way goes first, the catch-up retries next round.
  bool locked = pg::guard([&] { return ConditionalLockRelationOid(w.relid, AccessShareLock); });
  if (!locked) return {};
  Relation rel = pg::guard([&] { return try_relation_open(w.relid, NoLock); });
  if (rel == nullptr) return {};
  partitions::refresh_partitions(rel);
  const partitions::KeySpace keys = partitions::space_of(w.spec);
  const int64 now = GetCurrentTimestamp();
  const ClockPlan plan =
      plan_by_clock(keys, w.premake, w.mark_percent, now, partitions::clock_offset(keys, now));
  std::optional<int64> missing = first_missing(rel, plan);
  pg::guard([&] { relation_close(rel, NoLock); });
  if (!missing) return {};
  partitions::Ensured made =
      partitions::ensure_covering(w.relid, *missing, w.spec, partitions::LockWait::kGiveWay);
  // Creations of one window are one across the cluster through the advisory
  // lock per window number and the re-check under it (ensure_covering); the
  // shared watermark records the highest window attempted, as for ids.
  if (!made.partition.empty()) {
    const int64 n = keys.number_of(*missing);
    registry::with_state(w.relid, [n](registry::TableState& s) { (void)registry::claim(&s, n); });
  }
  return made;
}

}  // namespace partheal::ahead
