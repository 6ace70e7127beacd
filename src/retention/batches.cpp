#include "retention/batches.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

#include "retention/detach.hpp"
#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "pg/security.hpp"
#include "registry/table_state.hpp"

extern "C" {
#include "utils/timestamp.h"
}

namespace partheal::retention {

namespace {

// More due partitions than this and the table is behind.
constexpr size_t kBehindPast = 2;
constexpr size_t kMostInBatch = 8;
constexpr long kBatchPollMs = 0;

// Under writers whose transactions overlap there is no moment for a batch,
// and after kBatchFailingMs of failures the due partitions go one at a
// time again, by DETACH CONCURRENTLY where it can; before that, a DETACH
// CONCURRENTLY left pending by appenders that wait for the worker would
// hold up every detach of the table until its FINALIZE.
constexpr long kBatchFailingMs = 5000;
// After a batch failed otherwise than on a lock (an event trigger that
// refuses a DROP): the partitions go one at a time, each of them said as
// it fails.
constexpr long kBatchRefusedMs = 60000;

}  // namespace

Batch try_batch(const std::function<const attach::Parent&()>& parent, TableWatch& watch,
                const std::vector<const partitions::Partition*>& due_now, bool keep_table,
                const std::function<Retired(const partitions::Partition&)>& said) {
  Batch out;
  const TimestampTz now = pg::guard([] { return GetCurrentTimestamp(); });
  const bool batches_fail =
      watch.batches_failing_since &&
      TimestampDifferenceExceeds(*watch.batches_failing_since, now, kBatchFailingMs);
  const bool batches_refused = watch.batches_refused_until > now;
  // Caught up: the next time it falls behind, batches get their 5 s again.
  if (due_now.size() <= kBehindPast) watch.batches_failing_since.reset();
  if (due_now.size() <= kBehindPast || batches_refused) return out;
  const attach::Parent& p = parent();
  std::vector<Oid> batch;
  std::vector<const partitions::Partition*> in_batch;
  pg::as_role(p.owner, [&] {
    // The oldest due ones, a few more than a batch: a table whose
    // partitions may not go together costs only that many looks.
    for (size_t i = 0; i < due_now.size() && i < 2 * kMostInBatch; ++i) {
      const partitions::Partition* part = due_now[i];
      if (batch.size() == kMostInBatch) break;
      if (!detach_batchable(p, part->relid)) continue;
      batch.push_back(part->relid);
      in_batch.push_back(part);
    }
  });
  if (batch.size() <= 1) return out;
  // Said from the catalog before the DROP takes the names away.
  std::vector<Retired> retired;
  for (const partitions::Partition* part : in_batch) retired.push_back(said(*part));
  BatchResult b;
  pg::as_role(p.owner, [&] { b = detach_batch(p, batch, keep_table, kBatchPollMs); });
  if (b.detached > 0) {
    out.held_ms = b.parent_held_ms;
    for (size_t i = 0; i < batch.size(); ++i)
      if (std::find(b.done.begin(), b.done.end(), batch[i]) != b.done.end())
        out.retired.push_back(retired[i]);
    return out;
  }
  if (!b.error.empty()) {
    watch.batches_refused_until = TimestampTzPlusMilliseconds(now, kBatchRefusedMs);
    pg::report(
        LOG, 0,
        fmt::format("{} retention's batch of {} due partitions of {} failed, and was "
                    "taken back whole: {}",
                    errors::kLogRetentionLeft, batch.size(), pg::relation_label(p.relid), b.error),
        {{}, "For a minute they go one at a time, each failure said for its own."});
    return out;
  }
  if (!watch.batches_failing_since) watch.batches_failing_since = now;
  out.one_at_a_time = batches_fail;
  return out;
}

void say_batch(Oid relid, TableWatch& watch, const Batch& batch, bool kept) {
  watch.batches_failing_since.reset();
  for (const Retired& r : batch.retired) {
    registry::with_state(relid, [kept](registry::TableState& s) {
      registry::count(kept ? s.detached_windows : s.dropped_windows);
    });
    pg::report(LOG, 0,
               fmt::format("{} retention detached {} {} from {}{}: its upper bound is at or "
                           "before the horizon, {}; one of {} due partitions detached "
                           "together, the parent locked for {} ms",
                           errors::kLogRetired, r.label, r.bounds, pg::relation_label(relid),
                           kept ? " and kept it as a table" : " and dropped it", r.horizon,
                           batch.retired.size(), batch.held_ms));
  }
}

}  // namespace partheal::retention
