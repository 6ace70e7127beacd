// The look at a time-keyed table for create-ahead: its windows follow
// the clock (ahead/clock.hpp), not a sequence; and the step that makes one.
#pragma once

#include <vector>

#include "ahead/catch_up.hpp"
#include "partitions/ensure_covering.hpp"
#include "registry/registry.hpp"

namespace partheal::ahead {

// Looks at an opened table's windows: publishes what comes next, adds the
// table to `watched` when a window the clock needs is missing, and lowers
// `wake_at` (a TimestampTz; 0: not set) to when that next changes.
void poll_by_clock(Relation rel, const registry::ManagedTable& table, std::vector<Watched>& watched,
                   int64& wake_at);

// Inside the worker's transaction: the first window the clock needs now
// that is missing, made through ensure_covering. Empty when none is.
partitions::Ensured ensure_next_by_clock(const Watched& w);

}  // namespace partheal::ahead
