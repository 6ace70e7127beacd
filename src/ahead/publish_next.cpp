#include "ahead/publish_next.hpp"

#include "partitions/key_space.hpp"
#include "registry/table_state.hpp"

namespace partheal::ahead {

// The partition the worker creates next and when:
// the first one missing, which it creates now, or the one past what the
// position needs, made when the position reaches the id that extends that.
void publish_next(Oid relid, const Draws& d, const registry::ManagedTable& table,
                  const std::vector<int64>& ids, std::optional<int64> missing) {
  const int64 size = table.config.partition_size;
  const int64 key_max = table.shape.key_max;
  auto aligned = [&](int64 n, registry::NextReason reason, int64 at) {
    int64 first = 0;
    if (!partitions::first_id_of(n, size, key_max, &first)) {
      registry::set_next(relid, registry::NextReason::kNone);
      return;
    }
    __int128 end = (static_cast<__int128>(n) + 1) * size;
    registry::set_next(relid, reason, first, end > key_max ? key_max : static_cast<int64>(end), at);
  };
  if (missing) {
    aligned(partitions::partition_number(*missing, size), registry::NextReason::kMissing, *missing);
    return;
  }
  if (ids.empty()) {
    registry::set_next(relid, registry::NextReason::kNone);
    return;
  }
  const __int128 inc = Max(d.increment, static_cast<int64>(1));
  if (inc > size) {
    const __int128 after = static_cast<__int128>(ids.back()) + inc;
    const __int128 next_draw = static_cast<__int128>(d.from) + inc;
    if (after > key_max || next_draw > key_max) {
      registry::set_next(relid, registry::NextReason::kNone);
      return;
    }
    aligned(partitions::partition_number(static_cast<int64>(after), size),
            registry::NextReason::kAtNextDraw, static_cast<int64>(next_draw));
    return;
  }
  const int percent = table.config.mark_percent;
  const int64 n = partitions::partition_number(d.from, size);
  const bool past = d.from >= ahead::mark_threshold(n, size, percent, d.increment);
  const int64 last_n = partitions::partition_number(ids.back(), size);
  if (last_n == PG_INT64_MAX || (past && n == PG_INT64_MAX)) {
    registry::set_next(relid, registry::NextReason::kNone);
    return;
  }
  aligned(last_n + 1, registry::NextReason::kAtMark,
          ahead::mark_threshold(past ? n + 1 : n, size, percent, d.increment));
}

}  // namespace partheal::ahead
