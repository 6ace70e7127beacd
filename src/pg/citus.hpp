// Citus's calls, as partheal makes them: which node this is, whether a
// table is in Citus's metadata, commands on the coordinator, lock timeouts
// on the worker nodes, Citus's own locks. What partheal does with them
// across the cluster (the nodes' sequence positions, distributing a window
// before its attach) is citus/'s. Read
// from Citus's own catalogs (pg_dist_local_group, pg_dist_partition,
// pg_dist_node) and through its run_command_on_* functions, never from
// message text. Without the citus extension in this database every answer
// is "not Citus", at the cost of one catalog lookup.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pg/postgres.hpp"

namespace partheal::pg::citus {

// This node's part in a Citus cluster. A node with the extension that is
// not a worker (group 0) is the coordinator, also before any node is added.
enum class Role { kNone, kCoordinator, kWorker };
Role role();

// Whether relid is in Citus's metadata (pg_dist_partition): a distributed,
// reference or Citus-managed local table. Its DDL is run on the coordinator
// only, and Citus propagates it to every node.
bool is_citus_table(Oid relid);

// The coordinator as a worker node's metadata names it, "host:port"; empty
// when this node does not know it.
std::string coordinator_address();

// Runs one SQL command on the coordinator, from a worker node, over a
// connection of Citus's of its own: its own transaction, committed (with
// whatever it changed on every node) before this returns, as the current
// user. Its one value, as text. A command that fails comes back as its
// message's first line only (Citus relays no SQLSTATE): 08000 with that
// line. Throws PH006 when this node knows no coordinator.
std::string run_on_coordinator(const std::string& command);

// Citus gives the worker node of group g the ids of a bigserial from
// g << kNodeRangeBits on.
constexpr int kNodeRangeBits = 48;

// A node that is down costs this connection timeout once per call, not
// Citus's default of 30 s.
constexpr const char* kNodeConnectTimeoutMs = "2000";

// Whether the citus extension is in this database.
bool installed();

// A text column of SPI's current result, "" when NULL. Needs SPI connected.
std::string text_value(uint64 row, int col);

// A table's row of pg_dist_partition, as much of it as partheal reads.
struct DistRow {
  char method = 0;    // partmethod: 'h' hash, 'n' none (single shard, local, reference)
  char repmodel = 0;  // 's' streaming, 't' two-phase (reference tables)
  uint32 colocation = 0;
  std::string key;  // partkey: the distribution column, as Citus writes a Var
};
// Read by a scan under the catalog snapshot, not SQL: a statement's
// snapshot, taken before a create_distributed_table that committed while
// the statement waited for its lock (or a REPEATABLE READ transaction's),
// would not see the row, and a table distributed meanwhile would be taken
// for a plain one (its rows written into the coordinator's shells).
std::optional<DistRow> dist_row(Oid relid);

// Before DDL or DML of a distributed table, which Citus runs on the worker
// nodes too, over this transaction's connections to them: their
// lock_timeout, set to `ms` (0: none), so that the shard DDL there gives way
// as partheal's does here. Citus passes the setting on as a SET LOCAL, to
// the connections the transaction has and to those it opens later, until
// the transaction or the subtransaction it was set in ends; this node's own
// settings stay as they were. Needs SPI connected.
void set_lock_timeout_on_nodes(int ms);
// After that DDL, in a caller's transaction: the worker nodes' lock_timeout
// as it was for the caller, `caller_ms` if the caller passes its SET LOCALs
// on (citus.propagate_set_commands), their own default if not.
void restore_lock_timeout_on_nodes(int caller_ms);

// Whether an error's message is Citus's refusal of a distributed table's
// creation while a shard of its colocation group moves (Citus takes the
// group's lock without waiting, and gives no SQLSTATE of its own).
bool refused_during_shard_move(const char* message);
// Whether this transaction may wait for a shard move: it has no XID and
// holds none of Citus's advisory locks, which a move waits for.
bool may_wait_for_shard_move();
// Whether the colocation group of a distributed table is free of moves
// now: Citus's placement colocation lock, taken in SHARE, as a partition's
// creation takes it, and let go at once.
bool colocation_free(Oid relid);

// A lock of Citus's own (its advisory locks on shards, colocation groups,
// placements, rebalances and DDL serialization) that this transaction
// holds, named; nullopt when none. A distributed partition's ATTACH takes
// such locks in the worker's transaction, which would wait for ours.
std::optional<std::string> citus_lock_held();

}  // namespace partheal::pg::citus
