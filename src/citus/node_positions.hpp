// What a sequence has drawn on the Citus cluster's other nodes: Citus gives
// each worker node a range of its own for a bigserial column (from its
// group id << 48), so plain INSERTs there draw ids far from the
// coordinator's. Create-ahead keeps each node's range ahead
// (ahead/node_ranges), and an id-keyed retention's horizon and the heal's
// band are each node's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "citus/table.hpp"
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

// The worker nodes' positions of a Citus table's sequence, read (a round
// trip to each node, as `owner`) at the first question, for the
// questions a heal asks of one batch of ids. Off the coordinator, and for
// a table not in Citus's metadata, no node's traffic needs any id.
class NodeReach {
 public:
  NodeReach(const Table& table, Oid sequence, Oid owner)
      : table_(table), sequence_(sequence), owner_(owner) {}
  // Whether a worker node's traffic needs `id`: within `reach` partitions
  // of `size` ids of its position, or, `drawn` there, in its range below
  // its position.
  bool needs(int64 id, int64 size, int64 reach, bool drawn);

 private:
  Table table_;
  Oid sequence_;
  Oid owner_;
  std::optional<std::vector<NodePosition>> nodes_;
};

// Whether a key of a `size`-id partition may fall in a worker node's range
// (from 1 << 48 on): only then are the nodes asked.
bool may_be_in_node_range(int64 key, int64 size);

}  // namespace partheal::citus
