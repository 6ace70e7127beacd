// The create-ahead trigger, run after every id drawn by partheal_append or
// partheal_nextval: a few integer operations per id and no SQL. The caller
// never waits for the creation.
#pragma once

#include <vector>

#include "registry/registry.hpp"

namespace partheal::ahead {

// Counts the append (`rows` stored), and for an id that is its partition's
// mark, claims the far end of the partitions kept ahead (premake + 1, or the
// worker's headroom) in the shared watermark and queues its creation. `ids` are the ids in use:
// those drawn, and given ones that are not ahead of the sequence (mark_ids_in_use), so that one
// far-ahead id cannot raise the watermark over every partition below it.
void after_append(const registry::ManagedTable& table, const std::vector<int64>& ids, size_t rows);

// The ids among `drawn` and `given` that the mark may act on: all drawn
// ids, and a given id only when it is at a mark and its partition is not
// past the sequence position's (read as `owner`, only then).
std::vector<int64> mark_ids_in_use(const registry::ManagedTable& table, Oid owner,
                                   const std::vector<int64>& drawn,
                                   const std::vector<int64>& given);

// The same mark check for one id drawn by partheal_nextval, from the table's
// shared state and its premake (no SQL). False when the table has no state:
// it is not registered.
bool after_draw(Oid relid, int64 id, int64 increment, int premake);

}  // namespace partheal::ahead
