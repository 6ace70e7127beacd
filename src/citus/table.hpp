// A table as the Citus cluster sees it from this node, read with the
// parent (partitions::Parent::citus): whether it is in Citus's metadata,
// and what follows from that for partheal's DDL. Every question has the
// plain answer for a table not in Citus's metadata, so a capability asks
// in one line, without a branch of its own. Without the citus extension in
// the database a table is read as plain at the cost of one catalog lookup.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "pg/postgres.hpp"

namespace partheal::citus {

class Table {
 public:
  Table() = default;  // plain: not in Citus's metadata
  // Reads relid's row of Citus's metadata (pg_dist_partition), by a scan
  // under the catalog snapshot.
  static Table of(Oid relid);

  // A distributed, reference or Citus-managed local table: its rows live in
  // shards on the worker nodes, the coordinator's partitions are empty
  // shells, and its DDL runs on the coordinator only, which Citus
  // propagates to every node.
  bool in_metadata() const { return in_metadata_; }
  // Read on a worker node (this node's role is read at each call: a node
  // becomes a worker when a coordinator adds it): the table's registration,
  // its partitions and their DDL are the coordinator's.
  bool on_worker_node() const;
  // Read on the coordinator, whose worker nodes draw a bigserial's ids from
  // ranges of their own (node_positions.hpp).
  bool on_coordinator() const;

  // On a worker node, fails with PH006: `what` is the refused action
  // ("partheal_manage() runs"), and the message names the coordinator.
  // Returns on the coordinator, and for a plain table.
  void refuse_on_worker_node(const std::string& what, const std::string& hint) const;

  // Runs `f` with the worker nodes' lock_timeout set to `ms` (0: none), then
  // gives them `caller_ms` back: Citus runs the table's DDL (and a move's
  // DML) on every worker node too, where its lock waits get the bound they
  // have here, and the rest of the caller's transaction has the caller's
  // lock_timeout there again. For a plain table, `f` alone. On an error
  // nothing is given back: the setting is a SET LOCAL, which the
  // (sub)transaction's rollback takes back. Needs SPI connected.
  void with_lock_bound_on_nodes(int ms, int caller_ms, const std::function<void()>& f) const;

  // Whether a table about to be attached to this one is distributed by
  // partheal first (attach.hpp's distribute_for_attach): this table is in
  // Citus's metadata and `partition` not yet.
  bool distributes_on_attach(Oid partition) const;
  // Before `partition_name` is distributed and attached: Citus's
  // sequential mode when shard names would reach 63 bytes (attach.hpp).
  // Nothing for a plain table.
  void sequential_if_long_shard_names(const std::string& partition_name) const;

  // A lock of Citus's that this transaction holds and that the worker's
  // creation and distribution of a new partition would wait for, named;
  // nullopt when none, and for a plain table.
  std::optional<std::string> lock_held_that_distribution_needs() const;

  bool operator==(const Table& other) const { return in_metadata_ == other.in_metadata_; }
  bool operator!=(const Table& other) const { return !(*this == other); }

 private:
  Oid relid_ = InvalidOid;
  bool in_metadata_ = false;
};

}  // namespace partheal::citus
