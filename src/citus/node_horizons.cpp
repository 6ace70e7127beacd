#include "citus/node_horizons.hpp"

#include <vector>

#include "citus/node_positions.hpp"
#include "pg/citus.hpp"
#include "pg/security.hpp"
#include "pg/sequence.hpp"

namespace partheal::citus {

int64 node_range(int64 id) {
  return id >> pg::citus::kNodeRangeBits;
}

NodeHorizons node_horizons(Oid sequence, Oid owner, int64 retain, bool wait, bool other_ranges) {
  NodeHorizons h;
  std::optional<pg::SequencePosition> position;
  pg::as_role(owner, [&] { position = pg::read_sequence(sequence, wait); });
  if (position && position->drawn && position->last >= PG_INT64_MIN + retain)
    h.own = position->last - retain;
  const pg::citus::Role role = pg::citus::role();
  if (role == pg::citus::Role::kWorker) {
    // A worker node knows its own range's position only: the others' ids
    // are judged on the coordinator.
    h.by_range = true;
    if (h.own && node_range(position->last) > 0) h.ranges[node_range(position->last)] = *h.own;
    h.own.reset();
    return h;
  }
  if (role != pg::citus::Role::kCoordinator) return h;
  h.by_range = true;
  if (!other_ranges) return h;
  std::vector<NodePosition> nodes;
  pg::as_role(owner, [&] { nodes = worker_positions(sequence, nullptr); });
  for (const NodePosition& n : nodes) {
    const int64 range = node_range(n.last_value);
    if (!n.drawn || range <= 0 || n.last_value - retain < (range << pg::citus::kNodeRangeBits))
      continue;
    h.ranges[range] = n.last_value - retain;
  }
  return h;
}

}  // namespace partheal::citus
