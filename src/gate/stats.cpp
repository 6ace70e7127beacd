// partheal_insert_state(): the heals plain INSERTs made through the insert
// gate, behind partheal_stats.insert_heals. A function of its own, so that
// the older state functions keep their columns.
#include <vector>

#include "pg/boundary.hpp"
#include "registry/table_state.hpp"
#include "settings.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/tuplestore.h"
}

namespace partheal::gate {

namespace {

struct InsertRow {
  Oid relid;
  uint64 insert_heals;
};

void collect(registry::TableState* s, void* ctx) noexcept {
  auto* rows = static_cast<std::vector<InsertRow>*>(ctx);
  if (rows->size() == rows->capacity()) return;  // reserved in advance: never allocates here
  rows->push_back(InsertRow{s->key.relid, pg_atomic_read_u64(&s->insert_heals)});
}

}  // namespace

}  // namespace partheal::gate

using namespace partheal;

PARTHEAL_SQL_FUNCTION(partheal_insert_state) {
  settings::require_preloaded();
  std::vector<gate::InsertRow> rows;
  rows.reserve(static_cast<size_t>(registry::tracked()) + 64);
  registry::for_each_in_database(gate::collect, &rows);
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  pg::guard([&] {
    InitMaterializedSRF(fcinfo, 0);
    for (const gate::InsertRow& row : rows) {
      Datum values[2] = {ObjectIdGetDatum(row.relid),
                         Int64GetDatum(static_cast<int64>(row.insert_heals))};
      bool nulls[2] = {false, false};
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return Datum(0);
}
