// How many partitions to keep ahead of a table's sequence position, from the
// rate at which the position moves: integers and doubles only, no
// PostgreSQL, so the unit tests can drive it.
#pragma once

#include <cstdint>

namespace partheal::ahead {

// The worker's view of one table's traffic.
struct Traffic {
  bool primed = false;
  int64_t last_position = 0;
  int64_t last_ms = 0;
  double peak_ids_per_s = 0;  // the recent peak, decaying by half every kPeakHalfLifeMs
};

constexpr int64_t kPeakHalfLifeMs = 30000;

// Feeds one reading of the sequence position taken at now_ms.
void observe(Traffic& t, int64_t position, int64_t now_ms);

// Partitions to keep beyond the position's own: enough for ahead_seconds of
// traffic at the recent peak rate, at least 1 and at most cap.
int headroom(const Traffic& t, int64_t partition_size, double ahead_seconds, int cap);

// The partition numbers that must exist for a position: its own, then the
// headroom above it. Before the position reaches its partition's mark one
// fewer is needed ahead, so a quiet table (headroom 1) gets its next
// partition at the mark, as create-ahead does for appends.
struct Span {
  int64_t first;
  int64_t last;
};
Span needed(int64_t position, int64_t partition_size, int mark_percent, int headroom);

}  // namespace partheal::ahead
