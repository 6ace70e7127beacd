// A Citus worker node's appends to a distributed table, whose registration
// and partitions live on the coordinator: the registration is read from
// there (registry), and a missing partition is asked of the coordinator,
// whose partheal worker makes it, as Citus copies it to every node before
// the request returns. The same heal loop runs; only how a partition gets
// made differs.
#pragma once

#include <string>
#include <vector>

#include "heal/heal_loop.hpp"
#include "pg/error.hpp"
#include "registry/registry.hpp"

namespace partheal::append {

// How the heal loop gets a partition made for this table: this server's
// partheal worker (worker::create_covering_partition), or, for a table
// registered on the coordinator, partheal_cover_for_node there, told for
// each key whether the caller gave it (`given`, judged there as given ids
// are) or this node drew it from its range of the sequence.
heal::MakePartition partition_maker(const registry::ManagedTable& table,
                                    const std::vector<int64>& given);

// partheal_cover_for_node's answer, a JSON object's text: {"made": n}, or
// the error's SQLSTATE, message, detail and hint, which Citus would not
// relay.
std::string relayed_outcome(int32 made, const PgError* error);

}  // namespace partheal::append
