// The worker nodes' ranges of a Citus table's sequence, for the
// coordinator's look (sequence_poll.cpp).
#include <fmt/format.h>

#include <string>
#include <vector>

#include "ahead/headroom.hpp"
#include "ahead/node_ranges.hpp"
#include "errors.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "pg/security.hpp"
#include "settings.hpp"

extern "C" {
#include "utils/timestamp.h"
}

namespace partheal::ahead {

// On the Citus coordinator, the ids a distributed table's plain INSERTs on
// the worker nodes need: Citus gives each node's copy of a bigserial
// sequence a range of its own (from its group id << 48), so the local
// position says nothing of theirs. Each node's position is read through
// Citus's connections, once a poll, and kept ahead of with its own rate.
std::vector<std::vector<int64>> other_nodes_ids(Oid relid, Oid owner,
                                                const registry::ManagedTable& table,
                                                const pg::SequencePosition& seq, NodeWatch& watch) {
  if (!table.shape.citus.on_coordinator()) return {};
  std::vector<std::string> unreachable;
  // As the table's owner, as every other read of its sequence: the name is
  // resolved again on each node, where the owner could have put anything
  // under it, and Citus connects there as the current user.
  std::vector<citus::NodePosition> nodes;
  pg::as_role(owner, [&] { nodes = citus::worker_positions(table.shape.sequence, &unreachable); });
  std::string said;
  for (const std::string& u : unreachable) said += (said.empty() ? "" : "; ") + u;
  if (said != watch.unreachable_said && !said.empty())
    pg::report(LOG, 0,
               fmt::format("{} sequence poll of {}: Citus nodes that did not answer: {}",
                           errors::kLogCreateFailed, pg::relation_label(relid), said),
               {{}, "Their plain INSERTs get partitions ahead again once they answer."});
  watch.unreachable_said = said;
  const int64 size = table.config.partition_size;
  std::vector<std::vector<int64>> out;
  for (const citus::NodePosition& node : nodes) {
    const ahead::Draws d{node.last_value, node.drawn, seq.increment, seq.cache};
    ahead::Traffic& traffic = watch.traffic[node.node];
    ahead::observe(traffic, node.last_value, GetCurrentTimestamp() / 1000);
    int headroom = Max(table.config.premake + 1,
                       ahead::headroom(traffic, ahead::partition_step(seq.increment, size),
                                       settings::ahead_seconds, settings::max_ahead_partitions));
    out.push_back(
        ahead::needed_ids(d, size, table.config.mark_percent, headroom, table.shape.key_max));
  }
  return out;
}

}  // namespace partheal::ahead
