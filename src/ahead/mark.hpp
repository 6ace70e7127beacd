// The create-ahead trigger, run after every successful append: a few integer
// operations per id and no SQL. The append never waits for the creation.
#pragma once

#include <vector>

#include "manage/registry.hpp"

namespace partheal::ahead {

// Counts the append, and for an id that is its partition's mark, claims the
// next partition in the shared watermark and queues its creation.
void after_append(const manage::ManagedTable& table, const std::vector<int64>& ids);

// Claims partition `next` and queues it; the worker's sequence poll uses it
// for writers that never call partheal_append.
void request_next(const manage::ManagedTable& table, int64 next);

}  // namespace partheal::ahead
