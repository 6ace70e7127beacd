// On the Citus coordinator: the ids that a distributed table's plain
// INSERTs on the worker nodes need. Citus gives each node's copy of a
// bigint sequence a range of its own (from its group id << 48), so the
// coordinator's position says nothing of theirs.
#pragma once

#include <vector>

#include "pg/postgres.hpp"
#include "pg/sequence.hpp"
#include "registry/registry.hpp"

namespace partheal::ahead {

// One list per worker node, nearest its position first, as needed_ids
// gives them; empty off the coordinator and for a table not in Citus's
// metadata. Reads every node's position (one connection to each), as the
// table's owner.
std::vector<std::vector<int64>> other_nodes_ids(Oid relid, Oid owner,
                                                const registry::ManagedTable& table,
                                                const pg::SequencePosition& seq);

// Forgets what the poll kept of tables no longer registered.
void keep_node_ranges_of(const std::vector<Oid>& relids);

}  // namespace partheal::ahead
