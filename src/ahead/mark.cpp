#include "ahead/mark.hpp"
#include "ahead/table_state.hpp"
#include "heal/partition_math.hpp"
#include "worker/requests.hpp"

namespace partheal::ahead {

void request_next(const manage::ManagedTable& table, int64 next) {
  int64 first = 0;
  if (!heal::first_id_of(next, table.config.partition_size, table.shape.key_max, &first)) return;
  bool claimed = false;
  with_state(table.shape.relid, [&](TableState& s) {
    claimed = claim(&s, next);  // false: another backend, or an earlier call, has it
    if (claimed) count(s.ahead_requested);
  });
  if (claimed && !worker::request_create_ahead(table.shape.relid, next))
    with_state(table.shape.relid, [](TableState& s) { count(s.ahead_failed); });
}

void after_append(const manage::ManagedTable& table, const std::vector<int64>& ids) {
  uint64 rows = ids.size();
  bool tracked = with_state(table.shape.relid, [&](TableState& s) {
    count(s.appends);
    count(s.rows, rows);
  });
  if (!tracked || table.config.mark_percent == 0) return;
  const int64 size = table.config.partition_size;
  for (int64 id : ids) {
    int64 n = heal::partition_number(id, size);
    if (id == heal::mark_of(n, size, table.config.mark_percent)) request_next(table, n + 1);
  }
}

}  // namespace partheal::ahead
