#include "ahead/headroom.hpp"

#include <algorithm>
#include <cmath>

#include "partitions/key_space.hpp"

namespace partheal::ahead {

void observe(Traffic& t, int64_t position, int64_t now_ms) {
  if (t.primed && now_ms > t.last_ms) {
    double seconds = static_cast<double>(now_ms - t.last_ms) / 1000.0;
    // A position that moved back (setval, a new sequence) is no traffic.
    double rate = position > t.last_position
                      ? static_cast<double>(position - t.last_position) / seconds
                      : 0.0;
    double decay = std::exp2(-static_cast<double>(now_ms - t.last_ms) / kPeakHalfLifeMs);
    t.peak_ids_per_s = std::max(rate, t.peak_ids_per_s * decay);
  }
  t.primed = true;
  t.last_position = position;
  t.last_ms = now_ms;
}

int headroom(const Traffic& t, int64_t partition_size, double ahead_seconds, int cap) {
  double ids = t.peak_ids_per_s * ahead_seconds;
  double partitions = std::ceil(ids / static_cast<double>(partition_size));
  if (!(partitions >= 1)) return 1;  // NaN too
  return static_cast<int>(std::min(partitions, static_cast<double>(std::max(cap, 1))));
}

int64_t mark_threshold(int64_t n, int64_t partition_size, int mark_percent, int64_t increment) {
  const int64_t mark = partitions::mark_of(n, partition_size, mark_percent);
  const __int128 end = (static_cast<__int128>(n) + 1) * partition_size;
  const __int128 last_draw = end - std::max<int64_t>(increment, 1);
  return last_draw < mark ? static_cast<int64_t>(last_draw) : mark;
}

Span needed(int64_t position, int64_t partition_size, int mark_percent, int headroom,
            int64_t increment) {
  int64_t n = partitions::partition_number(position, partition_size);
  bool past_mark = position >= mark_threshold(n, partition_size, mark_percent, increment);
  int64_t ahead = past_mark ? headroom : headroom - 1;
  int64_t last = n > INT64_MAX - ahead ? INT64_MAX : n + ahead;
  return Span{n, last};
}

namespace {

int64_t clamp(__int128 v) {
  return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : static_cast<int64_t>(v);
}

}  // namespace

int64_t partition_step(int64_t increment, int64_t partition_size) {
  return std::max(increment, partition_size);
}

std::optional<int64_t> mark_target(int64_t id, int64_t increment, int64_t partition_size,
                                   int mark_percent) {
  if (increment <= 0) return std::nullopt;
  // Most draws are below their partition's threshold: two divisions, done.
  const int64_t n = partitions::partition_number(id, partition_size);
  const int64_t threshold = mark_threshold(n, partition_size, mark_percent, increment);
  if (id < threshold) return std::nullopt;
  const __int128 next = static_cast<__int128>(id) + increment;
  if (next > INT64_MAX) return std::nullopt;  // no draw after this one
  // Only the first draw of partition n past the threshold asks: the one
  // before it is in another partition, or below the threshold.
  const __int128 prev = static_cast<__int128>(id) - increment;
  const __int128 start = static_cast<__int128>(n) * partition_size;
  if (prev >= start && prev >= threshold) return std::nullopt;
  const int64_t next_n = partitions::partition_number(static_cast<int64_t>(next), partition_size);
  return std::max(n == INT64_MAX ? n : n + 1, next_n);
}

std::vector<int64_t> needed_ids(const Draws& d, int64_t partition_size, int mark_percent,
                                int headroom, int64_t type_max) {
  std::vector<int64_t> ids;
  const int64_t inc = std::max<int64_t>(d.increment, 1);
  // Ids handed out to sessions' caches below the position, still to come.
  const int64_t held = d.drawn ? std::max<int64_t>(d.cache - 1, 0) : 0;
  if (inc <= partition_size) {
    Span span = needed(d.from, partition_size, mark_percent, headroom, inc);
    int64_t lowest = clamp(static_cast<__int128>(d.from) - static_cast<__int128>(held) * inc);
    span.first = std::min(span.first, partitions::partition_number(lowest, partition_size));
    for (int64_t n = span.first;; ++n) {
      int64_t first = 0;
      if (!partitions::first_id_of(n, partition_size, type_max, &first)) break;
      int64_t end = clamp(std::min(static_cast<__int128>(first) + partition_size - 1,
                                   static_cast<__int128>(type_max)));
      ids.push_back(first);
      if (end != first) ids.push_back(end);
      if (n == span.last) break;
    }
    return ids;
  }
  // Every draw its own partition: the draws sessions hold (at most one
  // headroom of them), the position's own, then the next `headroom`.
  const int64_t below = std::min<int64_t>(held, std::max(headroom, 1));
  for (int64_t k = -below; k <= headroom; ++k) {
    __int128 id = static_cast<__int128>(d.from) + static_cast<__int128>(k) * inc;
    if (id > type_max) break;
    if (id < INT64_MIN) continue;
    ids.push_back(static_cast<int64_t>(id));
  }
  return ids;
}

int64_t watermark_ceiling(const Draws& d, int64_t partition_size, int mark_percent) {
  const int64_t n = partitions::partition_number(d.from, partition_size);
  // Not drawn yet: no mark of these ids has been reached, not even the
  // first draw's, which must still be able to claim.
  if (!d.drawn) return n;
  const int64_t inc = std::max<int64_t>(d.increment, 1);
  const int64_t next_n =
      partitions::partition_number(clamp(static_cast<__int128>(d.from) + inc), partition_size);
  if (d.from < mark_threshold(n, partition_size, mark_percent, inc)) return n;
  return std::max(n == INT64_MAX ? n : n + 1, next_n);
}

}  // namespace partheal::ahead
