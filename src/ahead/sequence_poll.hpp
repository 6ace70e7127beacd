// The look at an id-keyed table's sequence, for writers that never call
// partheal_append: they draw ids through the column default, so no append
// sees their mark, and the sequence position stands in.
#pragma once

#include <optional>

#include "ahead/catch_up.hpp"
#include "pg/sequence.hpp"
#include "worker/scheduler.hpp"

namespace partheal::ahead {

// The sequence as the ahead math sees it.
Draws draws_of(const pg::SequencePosition& seq);

// Publishes the headroom and what comes next, and returns the table's
// missing partition's description when its draws need one.
std::optional<Watched> poll_sequence(const worker::Look& look, TableWatch& watch);

}  // namespace partheal::ahead
