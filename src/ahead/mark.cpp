#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#include "ahead/headroom.hpp"
#include "ahead/mark.hpp"
#include "pg/sequence.hpp"
#include "registry/table_state.hpp"
#include "errors.hpp"
#include "partitions/catalog.hpp"
#include "pg/boundary.hpp"
#include "pg/report.hpp"
#include "pg/relation.hpp"
#include "pg/security.hpp"
#include "partitions/key_space.hpp"
#include "worker/ahead_queue.hpp"

extern "C" {
#include "access/relation.h"
#include "utils/timestamp.h"
}

namespace partheal::ahead {

namespace {

// A full queue is said once a minute per table at most, with the count of
// attempts it dropped since: a COPY crossing hundreds of marks would say it
// hundreds of times otherwise.
constexpr int64 kQueueFullLogEveryUs = 60 * USECS_PER_SEC;

void say_queue_full(Oid relid, int64 partition) {
  const uint64 now = static_cast<uint64>(GetCurrentTimestamp());
  uint64 dropped = 0;
  bool say = false;
  registry::with_state(relid, [&](registry::TableState& s) {
    registry::count(s.queue_full_dropped);
    uint64 last = pg_atomic_read_u64(&s.queue_full_said_at);
    if (last != 0 && now - last < static_cast<uint64>(kQueueFullLogEveryUs)) return;
    if (!pg_atomic_compare_exchange_u64(&s.queue_full_said_at, &last, now)) return;
    dropped = pg_atomic_exchange_u64(&s.queue_full_dropped, 0);
    say = true;
  });
  if (!say) return;
  pg::report(LOG, 0,
             fmt::format("{} create-ahead queue full: partition {} of {} is left to the heal and "
                         "to the worker's poll ({} attempt{} dropped since the last such line; "
                         "said once a minute at most)",
                         errors::kLogAheadDropped, partition, pg::relation_label(relid), dropped,
                         dropped == 1 ? "" : "s"),
             {{}, {}, true, true});
}

// Claims partition `next` and queues it, unless it exists already (a
// partheal_reserve made it, or a hand-made partition covers it): a
// partition that exists needs no request.
void request_next(Oid relid, int64 next, int64 size, int64 key_max) {
  int64 first = 0;
  if (!partitions::first_id_of(next, size, key_max, &first)) return;
  bool claimed = false;
  registry::with_state(relid, [&](registry::TableState& s) {
    claimed = registry::claim(&s, next);  // false: another backend, or an earlier call, has it
  });
  if (!claimed) return;
  // The caller holds a lock on the table already (its INSERT, COPY or
  // append): opening it again waits for nothing.
  Relation rel = pg::guard([&] { return try_relation_open(relid, AccessShareLock); });
  if (rel == nullptr) return;
  int64 end = static_cast<int64>(
      Min(static_cast<__int128>(first) + size - 1, static_cast<__int128>(key_max)));
  bool exists =
      partitions::has_own_partition(rel, first) && partitions::has_own_partition(rel, end);
  pg::guard([&] { relation_close(rel, NoLock); });
  if (exists) return;
  registry::with_state(relid, [](registry::TableState& s) { registry::count(s.ahead_requested); });
  if (!worker::queue_create_ahead(relid, next, size)) {
    registry::with_state(relid, [](registry::TableState& s) { registry::count(s.ahead_failed); });
    say_queue_full(relid, next);
  }
}

// The partition the draw that returned `id` asks for, if it is a mark
// (ahead/headroom.hpp: with an increment above one the mark id itself may
// never be drawn, and with one larger than a partition every draw asks for
// the next draw's partition).
//
// With draws in every partition, the mark asks for the far end of what the
// table keeps ahead (premake, or the worker's headroom when its traffic
// needs more), not for the next partition: registration and the poll have
// made that one already, so asking for it would ask for nothing, and a burst
// would wait for the worker's next poll. One mark, one partition: the queue
// keeps pace with the partitions the writers use.
std::optional<int64> mark_of_draw(int64 id, int64 increment, int64 size, int percent, int64 ahead) {
  std::optional<int64_t> target = mark_target(id, increment, size, percent);
  if (!target) return std::nullopt;
  if (increment > size) return static_cast<int64>(*target);  // the next draw's own partition
  const int64 n = partitions::partition_number(id, size);
  const int64 far = n > PG_INT64_MAX - ahead ? PG_INT64_MAX : n + ahead;
  return std::max(static_cast<int64>(*target), far);
}

// Partitions kept ahead of the one being filled once its mark is passed.
int64 kept_ahead(Oid relid, int premake) {
  uint32 headroom = 0;
  registry::with_state(
      relid, [&](registry::TableState& s) { headroom = pg_atomic_read_u32(&s.headroom); });
  return std::max<int64>({1, static_cast<int64>(premake) + 1, static_cast<int64>(headroom)});
}

}  // namespace

std::vector<int64> mark_ids_in_use(const registry::ManagedTable& table, Oid owner,
                                   const std::vector<int64>& drawn,
                                   const std::vector<int64>& given) {
  std::vector<int64> ids = drawn;
  const int64 size = table.config.partition_size;
  const int percent = table.config.mark_percent;
  if (percent == 0) return ids;
  std::optional<int64> position_n;
  for (int64 id : given) {
    std::optional<int64> target = mark_target(id, table.shape.sequence_increment, size, percent);
    if (!target) continue;
    int64 n = partitions::partition_number(id, size);
    if (!position_n) {
      std::optional<pg::SequencePosition> seq;
      pg::as_role(owner, [&] { seq = pg::read_sequence(table.shape.sequence, true); });
      position_n = partitions::partition_number(seq->last, size);
    }
    if (n <= *position_n) ids.push_back(id);
  }
  return ids;
}

void after_append(const registry::ManagedTable& table, const std::vector<int64>& ids, size_t rows) {
  bool tracked = registry::with_state(table.shape.relid, [&](registry::TableState& s) {
    registry::count(s.appends);
    registry::count(s.rows, rows);
  });
  if (!tracked || table.config.mark_percent == 0) return;
  const int64 size = table.config.partition_size;
  const int64 increment = table.shape.sequence_increment;
  const int64 ahead = kept_ahead(table.shape.relid, table.config.premake);
  for (int64 id : ids)
    if (std::optional<int64> target =
            mark_of_draw(id, increment, size, table.config.mark_percent, ahead))
      request_next(table.shape.relid, *target, size, table.shape.key_max);
}

bool after_draw(Oid relid, int64 id, int64 increment, int premake) {
  int64 size = 0;
  int percent = 0;
  int64 key_max = 0;
  bool tracked = registry::with_state(relid, [&](registry::TableState& s) {
    size = static_cast<int64>(pg_atomic_read_u64(&s.partition_size));
    percent = static_cast<int>(pg_atomic_read_u32(&s.mark_percent));
    key_max = static_cast<int64>(pg_atomic_read_u64(&s.key_max));
  });
  if (!tracked || size <= 0 || percent <= 0) return tracked;
  if (std::optional<int64> target =
          mark_of_draw(id, increment, size, percent, kept_ahead(relid, premake)))
    request_next(relid, *target, size, key_max);
  return tracked;
}

}  // namespace partheal::ahead
