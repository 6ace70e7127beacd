// On the Citus coordinator: the ids that a distributed table's plain
// INSERTs on the worker nodes need. Citus gives each node's copy of a
// bigint sequence a range of its own (from its group id << 48), so the
// coordinator's position says nothing of theirs.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ahead/headroom.hpp"

#include "pg/postgres.hpp"
#include "pg/sequence.hpp"
#include "registry/registry.hpp"

namespace partheal::ahead {

// What the look keeps of one table's worker nodes between rounds (in the
// table's memo, ahead/catch_up.hpp).
struct NodeWatch {
  std::unordered_map<std::string, Traffic> traffic;  // by "host:port"
  std::string unreachable_said;                      // the nodes that did not answer, as last said
};

// One list per worker node, nearest its position first, as needed_ids
// gives them; empty off the coordinator and for a table not in Citus's
// metadata. Reads every node's position (one connection to each), as the
// table's owner.
std::vector<std::vector<int64>> other_nodes_ids(Oid relid, Oid owner,
                                                const registry::ManagedTable& table,
                                                const pg::SequencePosition& seq, NodeWatch& watch);

}  // namespace partheal::ahead
