// An id-keyed retention's horizon on a Citus table. Each node draws a
// bigserial's ids from a range of its own (from its group id << 48), and
// the table's shards are not this node's to scan: the horizon counts from
// the sequences, `retain` ids below each node's position, in its range.
#pragma once

#include <map>
#include <optional>

#include "pg/postgres.hpp"

namespace partheal::citus {

struct NodeHorizons {
  // This node's own horizon, kept by the coordinator only: a worker node
  // judges its own range only, as one of `ranges`.
  std::optional<int64> own;
  std::map<int64, int64> ranges;  // a node's range (its group) -> its horizon
  // Whether partitions go by the node range they hold: on a Citus node;
  // a range not in `ranges` has no horizon there.
  bool by_range = false;
};

// Read as `owner`. The coordinator's own position (none while the sequence
// is not drawn from; nor, unless `wait`, while it is locked) and, with
// `other_ranges`, every worker node's (a round trip to each; the range of
// a node that does not answer has no horizon: none of its partitions is
// due). On a worker node, its own range's only.
NodeHorizons node_horizons(Oid sequence, Oid owner, int64 retain, bool wait, bool other_ranges);

// The node range an id falls in: 0 for the coordinator's.
int64 node_range(int64 id);

}  // namespace partheal::citus
