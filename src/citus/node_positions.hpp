// What a sequence has drawn on the Citus cluster's other nodes: Citus gives
// each worker node a range of its own for a bigserial column (from its
// group id << 48), so plain INSERTs there draw ids far from the
// coordinator's. Create-ahead keeps each node's range ahead
// (ahead/node_ranges), and an id-keyed retention's horizon and the heal's
// band are each node's.
#pragma once

#include <string>
#include <vector>

#include "pg/postgres.hpp"

namespace partheal::citus {

struct NodePosition {
  std::string node;  // "host:port"
  int64 last_value = 0;
  bool drawn = false;  // is_called: last_value was drawn
};

// The sequence goes by its schema and name, the same on every node. A node
// that does not answer is left out, and said in `unreachable`. Empty
// without Citus, and for a sequence that is not bigint.
std::vector<NodePosition> worker_positions(Oid sequence, std::vector<std::string>* unreachable);

}  // namespace partheal::citus
