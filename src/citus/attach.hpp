// A window's attach to a distributed table: what Citus's own ATTACH would
// do, done by partheal so that the attach holds no lock it cannot bound.
#pragma once

#include <string>

#include "pg/postgres.hpp"

namespace partheal::citus {

// A plain table about to be attached to the distributed table `parent`,
// distributed first as Citus's ATTACH would distribute it (by the parent's
// distribution column, or as a single shard, colocated with the parent),
// and the coordinator's local copy of its rows, which Citus leaves on disk,
// truncated. Before the ATTACH, while nothing refers to the table: Citus's
// truncate cascades, and once attached the table has a clone of every
// foreign key that references the parent, so the truncate would lock the
// referencing tables' coordinator shells ACCESS EXCLUSIVE to the end of the
// transaction and need TRUNCATE on them. A parent of another kind (a Citus
// local table) is left to the ATTACH. Needs SPI connected.
void distribute_for_attach(Oid table, Oid parent);

// Before a partition named `partition_name` is distributed and attached to
// the distributed table `parent`: Citus's sequential mode for the rest of
// the (sub)transaction's GUC level, when its shard names or those of the
// parent's partitions would reach 63 bytes, as Citus's own ATTACH does.
// Set before any multi-shard query of the attach, since Citus keeps using
// the parallel connections a transaction already opened.
void sequential_if_long_shard_names(Oid parent, const std::string& partition_name);

}  // namespace partheal::citus
