#include "ahead/mark.hpp"
#include "heal/partition_math.hpp"
#include "worker/requests.hpp"

namespace partheal::ahead {

void request_next(const manage::ManagedTable& table, int64 next) {
  int64 first = 0;
  if (!heal::first_id_of(next, table.config.partition_size, table.shape.key_max, &first)) return;
  if (!claim(table.shared, next)) return;  // another backend, or an earlier call, has it
  count(table.shared->ahead_requested);
  if (!worker::request_create_ahead(table.shape.relid, next)) count(table.shared->ahead_failed);
}

void after_append(const manage::ManagedTable& table, const std::vector<int64>& ids) {
  if (table.shared == nullptr) return;
  count(table.shared->appends);
  count(table.shared->rows, ids.size());
  if (table.config.mark_percent == 0) return;
  const int64 size = table.config.partition_size;
  for (int64 id : ids) {
    int64 n = heal::partition_number(id, size);
    if (id == heal::mark_of(n, size, table.config.mark_percent)) request_next(table, n + 1);
  }
}

}  // namespace partheal::ahead
