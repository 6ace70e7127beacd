// The config table, partheal_config, and pg_extension's row for partheal,
// read from the catalog (config_table.cpp) for registry.cpp's cache.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "registry/registry.hpp"

extern "C" {
#include "access/htup.h"
#include "access/tupdesc.h"
}

namespace partheal::registry {

struct ExtensionRow {
  Oid owner;
  Oid schema;
};

// pg_extension's row for partheal. PostgreSQL 15 exports no lookup of an
// extension's schema, so the catalog is read directly. 55000 when the
// extension is not installed in this database.
ExtensionRow extension_row();

// The config table's rows (only relid's, unless InvalidOid), as committed
// now.
std::vector<std::pair<Oid, Config>> read_config(Oid only);

// A row shaped as the config table's (a row of its type: a Citus worker
// node reads the coordinator's row so), as the cache keeps it; nullopt for
// a row without a parent or a size or interval.
std::optional<Config> config_of_tuple(HeapTuple tuple, TupleDesc desc);

// On a Citus worker node, the coordinator's registration of a table there
// (coordinator_config.cpp); nullopt when it has none. A round trip.
std::optional<Config> coordinator_config(Relation parent);

// The config table's OID as last read (InvalidOid before): its
// invalidation makes every cached registration stale. A plain read, for
// the invalidation callback.
Oid last_config_relid() noexcept;

}  // namespace partheal::registry
