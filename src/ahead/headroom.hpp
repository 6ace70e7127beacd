// How many partitions to keep ahead of a table's sequence position, from the
// rate at which the position moves: integers and doubles only, no
// PostgreSQL, so the unit tests can drive it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

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
Span needed(int64_t position, int64_t partition_size, int mark_percent, int headroom,
            int64_t increment = 1);

// The lowest id of partition n whose draw counts as reaching the mark, for
// a sequence stepping by `increment`: the mark itself, or, when the
// increment is larger than what is left above the mark, the first id whose
// next draw leaves the partition (the mark id may never be drawn). The
// marks, the poll and partheal_stats all decide "past the mark" with it.
int64_t mark_threshold(int64_t n, int64_t partition_size, int mark_percent, int64_t increment);

// What a table's id sequence will draw next, as the worker reads it.
struct Draws {
  int64_t from;       // the last id drawn; undrawn: the id the first draw returns
  bool drawn;         // false before the first nextval, and after RESTART
  int64_t increment;  // > 0
  int64_t cache;      // with CACHE > 1, sessions hold up to cache - 1 draws below `from`
};

// The distance between the partitions successive draws need: a partition,
// or with an increment larger than a partition (interleaved ids, INCREMENT
// BY N per node) the increment, since every draw then lands in a partition
// of its own. Traffic in ids divided by it is traffic in partitions.
int64_t partition_step(int64_t increment, int64_t partition_size);

// The partition a draw's mark asks for, or nothing. A draw asks when it is
// the first of its partition to reach the mark, or to be the last the
// partition gets (the next draw leaves it: an increment larger than what is
// left above the mark); it asks for the partition the next draws need: the
// next one, or, with an increment larger than a partition, the next draw's.
std::optional<int64_t> mark_target(int64_t id, int64_t increment, int64_t partition_size,
                                   int mark_percent);

// The ids whose partitions must exist for `d`'s draws to land, lowest first:
// with an increment up to a partition, both ends of every partition from the
// lowest id sessions may hold to the headroom (`needed`, from `from`); with a
// larger increment, the ids themselves: the draws sessions may hold, the
// position's own, and the next `headroom` draws. Clipped to the key type.
std::vector<int64_t> needed_ids(const Draws& d, int64_t partition_size, int mark_percent,
                                int headroom, int64_t type_max);

// The highest partition number the marks may have claimed for `d`'s
// position: the partition its own mark asks for once the position has
// reached it, its own partition before. A watermark above it was left by
// ids no longer in use (a sequence moved back, RESTART), and is pulled down
// to it, so that the marks of the ids in use ask again.
int64_t watermark_ceiling(const Draws& d, int64_t partition_size, int mark_percent);

}  // namespace partheal::ahead
