// partheal_upkeep_state(): the counters of the worker's upkeep of this
// database's tables, behind partheal_stats' drained_rows, drained_windows
// (the drain of DEFAULT), dropped_windows and detached_windows (retention),
// and default_expired_rows (rows the drain leaves in DEFAULT past retention).
#include <vector>

#include "registry/table_state.hpp"
#include "pg/boundary.hpp"
#include "settings.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/tuplestore.h"
}

namespace partheal::upkeep {

namespace {

struct UpkeepRow {
  Oid relid;
  uint64 drained_rows;
  uint64 drained_windows;
  uint64 dropped_windows;
  uint64 detached_windows;
  uint64 expired_in_default;  // plus one; 0 never counted
};

void collect(registry::TableState* s, void* ctx) noexcept {
  auto* rows = static_cast<std::vector<UpkeepRow>*>(ctx);
  if (rows->size() == rows->capacity()) return;  // reserved in advance: never allocates here
  rows->push_back(UpkeepRow{
      s->key.relid, pg_atomic_read_u64(&s->drained_rows), pg_atomic_read_u64(&s->drained_windows),
      pg_atomic_read_u64(&s->dropped_windows), pg_atomic_read_u64(&s->detached_windows),
      pg_atomic_read_u64(&s->expired_in_default)});
}

}  // namespace

}  // namespace partheal::upkeep

using namespace partheal;

PARTHEAL_SQL_FUNCTION(partheal_upkeep_state) {
  settings::require_preloaded();
  std::vector<upkeep::UpkeepRow> rows;
  // Room for every state now and a few registered meanwhile, as
  // partheal_stats() reserves.
  rows.reserve(static_cast<size_t>(registry::tracked()) + 64);
  registry::for_each_in_database(upkeep::collect, &rows);
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  pg::guard([&] {
    InitMaterializedSRF(fcinfo, 0);
    for (const upkeep::UpkeepRow& row : rows) {
      Datum values[6] = {ObjectIdGetDatum(row.relid),
                         Int64GetDatum(static_cast<int64>(row.drained_rows)),
                         Int64GetDatum(static_cast<int64>(row.drained_windows)),
                         Int64GetDatum(static_cast<int64>(row.dropped_windows)),
                         Int64GetDatum(static_cast<int64>(row.detached_windows)),
                         Int64GetDatum(static_cast<int64>(row.expired_in_default) - 1)};
      bool nulls[6] = {false, false, false, false, false, row.expired_in_default == 0};
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return Datum(0);
}
