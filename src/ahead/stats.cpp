// partheal_stats(): the shared-memory counters of this database's tables.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "registry/table_state.hpp"
#include "pg/boundary.hpp"
#include "settings.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

namespace partheal::ahead {

namespace {

struct StatsRow {
  Oid relid;
  uint64 counters[7];
  int64 watermark;
  TimestampTz last_heal;
  uint32 headroom;
  int64 partition_size;
  int64 next_from;
  int64 next_to;
  int64 next_at;
  registry::NextReason next_reason;
  int64 newest_upper;
  uint32 newest_upper_kind;
  registry::KeyFormat format;
};

// A time-keyed table's bounds as its key type writes them (UTC for
// timestamptz); an id-keyed table's have columns of their own.
partitions::KeySpace bounds_of(const StatsRow& row) {
  partitions::KeySpec spec;
  spec.cut = partitions::Cut::kDays;
  spec.date_key = row.format == registry::KeyFormat::kDate;
  spec.zoned = row.format == registry::KeyFormat::kTimestamptz;
  return partitions::KeySpace(spec);
}

std::string newest_upper_text(const StatsRow& row) {
  if (row.format == registry::KeyFormat::kIds || row.newest_upper_kind == 0) return "";
  if (row.newest_upper_kind == 2) return "MAXVALUE";
  return bounds_of(row).key_text(row.newest_upper);
}

std::string next_window_text(const StatsRow& row) {
  if (row.format == registry::KeyFormat::kIds) return "";
  if (row.next_reason != registry::NextReason::kMissing &&
      row.next_reason != registry::NextReason::kAtTime)
    return "";
  partitions::KeySpace keys = bounds_of(row);
  return fmt::format("[{}, {})", keys.key_text(row.next_from), keys.key_text(row.next_to));
}

// partheal_stats.next_reason, in words.
std::string reason_text(const StatsRow& row) {
  switch (row.next_reason) {
    case registry::NextReason::kNotPolled:
      return "";
    case registry::NextReason::kMissing:
      if (row.format != registry::KeyFormat::kIds)
        return "missing: the clock needs it now; being created";
      return fmt::format("missing: the ids the sequence draws need it (id {}); being created",
                         row.next_at);
    case registry::NextReason::kAtTime:
      return fmt::format("when the clock reaches {}", bounds_of(row).key_text(row.next_at));
    case registry::NextReason::kAtMark:
      return fmt::format("when ids reach {}, the create-ahead mark", row.next_at);
    case registry::NextReason::kAtNextDraw:
      return fmt::format(
          "at the next draw, id {}: with an increment larger than a partition "
          "each draw has a partition of its own",
          row.next_at);
    case registry::NextReason::kOff:
      return "none: create-ahead is off for the table";
    case registry::NextReason::kDefault:
      return "none: a DEFAULT partition is attached";
    case registry::NextReason::kNone:
      return "none: the key type has no room for another partition";
  }
  return "";
}

void collect(registry::TableState* s, void* ctx) noexcept {
  auto* rows = static_cast<std::vector<StatsRow>*>(ctx);
  if (rows->size() == rows->capacity()) return;  // reserved in advance: never allocates here
  StatsRow row{
      s->key.relid,
      {pg_atomic_read_u64(&s->appends), pg_atomic_read_u64(&s->rows), pg_atomic_read_u64(&s->heals),
       pg_atomic_read_u64(&s->exhaustions), pg_atomic_read_u64(&s->ahead_requested),
       pg_atomic_read_u64(&s->ahead_created), pg_atomic_read_u64(&s->ahead_failed)},
      registry::watermark(s),
      static_cast<TimestampTz>(pg_atomic_read_u64(&s->last_heal)),
      pg_atomic_read_u32(&s->headroom),
      static_cast<int64>(pg_atomic_read_u64(&s->partition_size)),
      static_cast<int64>(pg_atomic_read_u64(&s->next_from)),
      static_cast<int64>(pg_atomic_read_u64(&s->next_to)),
      static_cast<int64>(pg_atomic_read_u64(&s->next_at)),
      static_cast<registry::NextReason>(pg_atomic_read_u32(&s->next_reason)),
      static_cast<int64>(pg_atomic_read_u64(&s->newest_upper)),
      pg_atomic_read_u32(&s->newest_upper_kind),
      static_cast<registry::KeyFormat>(pg_atomic_read_u32(&s->key_format))};
  rows->push_back(row);
}

}  // namespace

}  // namespace partheal::ahead

using namespace partheal;

PARTHEAL_SQL_FUNCTION(partheal_stats) {
  settings::require_preloaded();
  std::vector<ahead::StatsRow> rows;
  // Room for every state now and a few registered meanwhile; the collector
  // never allocates, so a table registered past that shows next time.
  rows.reserve(static_cast<size_t>(registry::tracked()) + 64);
  registry::for_each_in_database(ahead::collect, &rows);
  std::vector<std::string> reasons, uppers, windows;
  for (const ahead::StatsRow& row : rows) {
    reasons.push_back(ahead::reason_text(row));
    uppers.push_back(ahead::newest_upper_text(row));
    windows.push_back(ahead::next_window_text(row));
  }
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  pg::guard([&] {
    InitMaterializedSRF(fcinfo, 0);
    // 0.1's declaration has no headroom column, 0.2's none of the columns
    // after it, 0.4's not the last two; tuplestore_putvalues reads only as
    // many values as the declared row has.
    for (size_t i = 0; i < rows.size(); ++i) {
      const ahead::StatsRow& row = rows[i];
      Datum values[17];
      bool nulls[17] = {};
      const bool by_time = row.format != registry::KeyFormat::kIds;
      values[0] = ObjectIdGetDatum(row.relid);
      for (int c = 0; c < 7; ++c)
        values[1 + c] = Int64GetDatum(static_cast<int64>(row.counters[c]));
      values[8] = Int64GetDatum(row.watermark);
      nulls[8] = row.watermark == registry::kNothingAttempted;
      values[9] = TimestampTzGetDatum(row.last_heal);
      nulls[9] = row.last_heal == 0;
      values[10] = Int32GetDatum(static_cast<int32>(row.headroom));
      nulls[10] = row.headroom == 0;
      // The watermark as an id: marks have asked for partitions up to
      // here (exclusive).
      __int128 claimed = (static_cast<__int128>(row.watermark) + 1) * row.partition_size;
      values[11] = Int64GetDatum(claimed > PG_INT64_MAX   ? PG_INT64_MAX
                                 : claimed < PG_INT64_MIN ? PG_INT64_MIN
                                                          : static_cast<int64>(claimed));
      nulls[11] = nulls[8] || row.partition_size <= 0 || by_time;
      bool no_next = row.next_reason == registry::NextReason::kNotPolled ||
                     row.next_reason == registry::NextReason::kOff ||
                     row.next_reason == registry::NextReason::kDefault ||
                     row.next_reason == registry::NextReason::kNone;
      values[12] = Int64GetDatum(row.next_from);
      nulls[12] = no_next || by_time;
      values[13] = Int64GetDatum(row.next_to);
      nulls[13] = no_next || by_time;
      values[14] = CStringGetTextDatum(reasons[i].c_str());
      nulls[14] = reasons[i].empty();
      values[15] = CStringGetTextDatum(uppers[i].c_str());
      nulls[15] = uppers[i].empty();
      values[16] = CStringGetTextDatum(windows[i].c_str());
      nulls[16] = windows[i].empty();
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return Datum(0);
}
