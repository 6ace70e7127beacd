// partheal on a Citus cluster: the one header the capabilities include.
// Citus's own calls are pg/citus's; what partheal does with them across
// the cluster is this room's, asked through a parent's citus::Table (read
// with partitions::Parent) or the few functions below, each with the plain
// answer for a table not in Citus's metadata. No other folder includes
// pg/citus.hpp or another header of this room (test/check_layers.sh).
#pragma once

#include "citus/attach.hpp"          // distribute_for_attach
#include "citus/coordinator.hpp"     // a worker node's way to the coordinator
#include "citus/node_horizons.hpp"   // an id-keyed retention's horizon per node range
#include "citus/node_positions.hpp"  // the worker nodes' sequence positions
#include "citus/relayed_errors.hpp"  // a routing miss relayed from a shard
#include "citus/shard_moves.hpp"     // a heal's wait for a shard move
#include "citus/table.hpp"           // a table as the cluster sees it
