// Create-ahead by the clock, for a time-keyed table: which windows must
// exist now, and when that next changes. Pure C++ over the key space, so
// the unit tests can drive it with any "now".
#pragma once

#include <cstdint>
#include <vector>

#include "partitions/key_space.hpp"

namespace partheal::ahead {

struct ClockPlan {
  int64_t current = 0;  // the window holding now
  int64_t last = 0;     // the last window that must exist now
  // Now's key, then both ends of every window from `current` to `last`, in
  // order: a window made by hand may cover one end and not the other.
  std::vector<int64_t> keys;
  // When the plan next changes, in microseconds since 2000-01-01 (a
  // TimestampTz): the next window's start, or the mark of `last`.
  int64_t wake_at = 0;
};

// Every window from the one holding now through `premake` after it; and
// once now passes `mark_percent` of the last of them (premake 0), the next.
// `offset` is how far the key's wall clock is ahead of UTC (a timestamp or
// date key's, partitions::clock_offset); 0 for timestamptz.
ClockPlan plan_by_clock(const partitions::KeySpace& keys, int premake, int mark_percent,
                        int64_t now, int64_t offset = 0);

}  // namespace partheal::ahead
