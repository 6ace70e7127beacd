#include <optional>

#include "ahead/mark.hpp"
#include "ahead/sequence.hpp"
#include "ahead/table_state.hpp"
#include "pg/security.hpp"
#include "heal/partition_math.hpp"
#include "worker/requests.hpp"

namespace partheal::ahead {

namespace {

// Claims partition `next` and queues it.
void request_next(Oid relid, int64 next, int64 size, int64 key_max) {
  int64 first = 0;
  if (!heal::first_id_of(next, size, key_max, &first)) return;
  bool claimed = false;
  with_state(relid, [&](TableState& s) {
    claimed = claim(&s, next);  // false: another backend, or an earlier call, has it
    if (claimed) count(s.ahead_requested);
  });
  if (claimed && !worker::request_create_ahead(relid, next, size))
    with_state(relid, [](TableState& s) { count(s.ahead_failed); });
}

// True when the draw that returned id passed its partition's mark: with an
// increment above one the mark id itself may never be drawn.
bool is_mark(int64 id, int64 increment, int64 size, int percent, int64* partition) {
  *partition = heal::partition_number(id, size);
  int64 mark = heal::mark_of(*partition, size, percent);
  return id >= mark && static_cast<__int128>(id) - increment < mark;
}

}  // namespace

std::vector<int64> mark_ids_in_use(const manage::ManagedTable& table, Oid owner,
                                   const std::vector<int64>& drawn,
                                   const std::vector<int64>& given) {
  std::vector<int64> ids = drawn;
  const int64 size = table.config.partition_size;
  const int percent = table.config.mark_percent;
  if (percent == 0) return ids;
  std::optional<int64> position_n;
  for (int64 id : given) {
    int64 n = 0;
    if (!is_mark(id, table.shape.sequence_increment, size, percent, &n)) continue;
    if (!position_n) {
      std::optional<SequencePosition> seq;
      pg::as_role(owner, [&] { seq = read_sequence(table.shape.sequence, true); });
      position_n = heal::partition_number(seq->last, size);
    }
    if (n <= *position_n) ids.push_back(id);
  }
  return ids;
}

void after_append(const manage::ManagedTable& table, const std::vector<int64>& ids, size_t rows) {
  bool tracked = with_state(table.shape.relid, [&](TableState& s) {
    count(s.appends);
    count(s.rows, rows);
  });
  if (!tracked || table.config.mark_percent == 0) return;
  const int64 size = table.config.partition_size;
  for (int64 id : ids) {
    int64 n = 0;
    if (is_mark(id, table.shape.sequence_increment, size, table.config.mark_percent, &n))
      request_next(table.shape.relid, n + 1, size, table.shape.key_max);
  }
}

bool after_draw(Oid relid, int64 id, int64 increment) {
  int64 size = 0;
  int percent = 0;
  int64 key_max = 0;
  bool tracked = with_state(relid, [&](TableState& s) {
    size = static_cast<int64>(pg_atomic_read_u64(&s.partition_size));
    percent = static_cast<int>(pg_atomic_read_u32(&s.mark_percent));
    key_max = static_cast<int64>(pg_atomic_read_u64(&s.key_max));
  });
  int64 n = 0;
  if (tracked && size > 0 && percent > 0 && is_mark(id, increment, size, percent, &n))
    request_next(relid, n + 1, size, key_max);
  return tracked;
}

}  // namespace partheal::ahead
