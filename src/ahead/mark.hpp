// The create-ahead trigger, run after every id drawn by partheal_append or
// partheal_nextval: a few integer operations per id and no SQL. The caller
// never waits for the creation.
#pragma once

#include <vector>

#include "manage/registry.hpp"

namespace partheal::ahead {

// Counts the append, and for an id that is its partition's mark, claims the
// next partition in the shared watermark and queues its creation.
void after_append(const manage::ManagedTable& table, const std::vector<int64>& ids);

// The same mark check for one id drawn by partheal_nextval, from the table's
// shared state alone (no registry, no SQL). False when the table has no
// state: it is not registered.
bool after_draw(Oid relid, int64 id, int64 increment);

}  // namespace partheal::ahead
