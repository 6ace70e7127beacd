// A plain writer's draw that would outrun the partitions: partheal_nextval,
// for a row being written into the table, waits (bounded) for the worker to
// make the partition the next draws fall into before it hands out its id.
//
// Why waiting works and creating it here would not: an INSERT routes its rows
// through the partitions it saw when it started, and this backend cannot
// attach to a table its own statement is writing. So the partition for ids
// still to be drawn must be committed, by the worker, before the statements
// that draw them start. A draw that leaves fewer ids routable ahead of it
// than the rest of a partition past its mark (and never fewer than 256, or
// 16 partitions' worth when that is less) waits for the missing partitions; while it waits,
// the other writers' draws wait too, so the sequence outruns the partitions only with more than
// 256 writers drawing at once, or when a writer is held longer between its statement's start and
// its draw than the others take for 256 draws (160 at partition size 10).
#pragma once

#include "registry/registry.hpp"

namespace partheal::ahead {

// For the id just drawn for a row of `table` (the caller holds ROW
// EXCLUSIVE on it, as INSERT and COPY do, and may insert), whether or not it
// is past its partition's mark (a first draw, with a few ids left in the
// only partition, may be one of many writers' at once): asks the worker
// for each missing partition among the ids the draws after this one need
// (see above) and waits for it, at most partheal.heal_wait_timeout each. A
// wait that runs out is given up on for good, quietly: the drawn id's own
// row is not at stake, and the worker has said why in the log. Returns at
// once in every other case, after two comparisons once the partitions are
// known to exist.
void wait_for_next_partition(const registry::ManagedTable& table, int64 id);

}  // namespace partheal::ahead
