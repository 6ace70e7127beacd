// partheal_stats(): the shared-memory counters of this database's tables.
#include <vector>

#include "ahead/table_state.hpp"
#include "pg/boundary.hpp"
#include "settings.hpp"

extern "C" {
#include "funcapi.h"
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
};

void collect(TableState* s, void* ctx) noexcept {
  auto* rows = static_cast<std::vector<StatsRow>*>(ctx);
  if (rows->size() == rows->capacity()) return;  // reserved in advance: never allocates here
  StatsRow row{
      s->key.relid,
      {pg_atomic_read_u64(&s->appends), pg_atomic_read_u64(&s->rows), pg_atomic_read_u64(&s->heals),
       pg_atomic_read_u64(&s->exhaustions), pg_atomic_read_u64(&s->ahead_requested),
       pg_atomic_read_u64(&s->ahead_created), pg_atomic_read_u64(&s->ahead_failed)},
      watermark(s),
      static_cast<TimestampTz>(pg_atomic_read_u64(&s->last_heal)),
      pg_atomic_read_u32(&s->headroom)};
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
  rows.reserve(static_cast<size_t>(ahead::tracked()) + 64);
  ahead::for_each_in_database(ahead::collect, &rows);
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  pg::guard([&] {
    InitMaterializedSRF(fcinfo, 0);
    // 0.1's declaration has no headroom column; tuplestore_putvalues reads
    // only as many values as the declared row has.
    for (const ahead::StatsRow& row : rows) {
      Datum values[11];
      bool nulls[11] = {};
      values[0] = ObjectIdGetDatum(row.relid);
      for (int i = 0; i < 7; ++i)
        values[1 + i] = Int64GetDatum(static_cast<int64>(row.counters[i]));
      values[8] = Int64GetDatum(row.watermark);
      nulls[8] = row.watermark == ahead::kNothingAttempted;
      values[9] = TimestampTzGetDatum(row.last_heal);
      nulls[9] = row.last_heal == 0;
      values[10] = Int32GetDatum(static_cast<int32>(row.headroom));
      nulls[10] = row.headroom == 0;
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return Datum(0);
}
