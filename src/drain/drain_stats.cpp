// partheal_drain_state(): the drain's counters of this database's tables,
// behind partheal_stats.drained_rows and drained_windows.
#include <vector>

#include "registry/table_state.hpp"
#include "pg/boundary.hpp"
#include "settings.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/tuplestore.h"
}

namespace partheal::drain {

namespace {

struct DrainRow {
  Oid relid;
  uint64 rows;
  uint64 windows;
};

void collect(registry::TableState* s, void* ctx) noexcept {
  auto* rows = static_cast<std::vector<DrainRow>*>(ctx);
  if (rows->size() == rows->capacity()) return;  // reserved in advance: never allocates here
  rows->push_back(DrainRow{s->key.relid, pg_atomic_read_u64(&s->drained_rows),
                           pg_atomic_read_u64(&s->drained_windows)});
}

}  // namespace

}  // namespace partheal::drain

using namespace partheal;

PARTHEAL_SQL_FUNCTION(partheal_drain_state) {
  settings::require_preloaded();
  std::vector<drain::DrainRow> rows;
  // Room for every state now and a few registered meanwhile, as
  // partheal_stats() reserves.
  rows.reserve(static_cast<size_t>(registry::tracked()) + 64);
  registry::for_each_in_database(drain::collect, &rows);
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  pg::guard([&] {
    InitMaterializedSRF(fcinfo, 0);
    for (const drain::DrainRow& row : rows) {
      Datum values[3] = {ObjectIdGetDatum(row.relid), Int64GetDatum(static_cast<int64>(row.rows)),
                         Int64GetDatum(static_cast<int64>(row.windows))};
      bool nulls[3] = {};
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return Datum(0);
}
