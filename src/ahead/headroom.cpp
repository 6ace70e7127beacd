#include "ahead/headroom.hpp"

#include <algorithm>
#include <cmath>

#include "heal/partition_math.hpp"

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

Span needed(int64_t position, int64_t partition_size, int mark_percent, int headroom) {
  int64_t n = heal::partition_number(position, partition_size);
  bool past_mark = position >= heal::mark_of(n, partition_size, mark_percent);
  int64_t ahead = past_mark ? headroom : headroom - 1;
  int64_t last = n > INT64_MAX - ahead ? INT64_MAX : n + ahead;
  return Span{n, last};
}

}  // namespace partheal::ahead
