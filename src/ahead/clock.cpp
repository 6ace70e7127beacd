#include "ahead/clock.hpp"

#include <algorithm>
#include <limits>

namespace partheal::ahead {

ClockPlan plan_by_clock(const partitions::KeySpace& keys, int premake, int mark_percent,
                        int64_t now, int64_t offset) {
  using partitions::Bound;
  ClockPlan plan;
  const int64_t key = keys.key_at(now + offset);
  plan.current = keys.number_of(key);
  plan.last = plan.current + std::max(premake, 0);
  if (mark_percent > 0 && key >= keys.mark_of(plan.last, mark_percent)) ++plan.last;
  plan.keys.push_back(key);
  for (int64_t n = plan.current; n <= plan.last; ++n) {
    partitions::Range r = keys.window(n);
    if (r.lower.kind == Bound::Kind::kMaxValue) break;
    plan.keys.push_back(r.lower.kind == Bound::Kind::kValue ? r.lower.value : keys.spec().min);
    plan.keys.push_back(r.upper.kind == Bound::Kind::kValue ? r.upper.value - 1 : keys.spec().max);
  }
  // The next change: the start of the window after now's, or, before it,
  // the mark of the last window (which only premake 0 reaches in it).
  partitions::Range next = keys.window(plan.current + 1);
  plan.wake_at = next.lower.kind == Bound::Kind::kValue ? keys.time_of(next.lower.value) - offset
                                                        : std::numeric_limits<int64_t>::max();
  if (mark_percent > 0) {
    int64_t mark = keys.mark_of(plan.last, mark_percent);
    if (mark > key) plan.wake_at = std::min(plan.wake_at, keys.time_of(mark) - offset);
  }
  return plan;
}

}  // namespace partheal::ahead
