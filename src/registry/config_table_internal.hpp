// The config table, partheal_config, and pg_extension's row for partheal,
// read from the catalog (config_table.cpp) for registry.cpp's cache.
#pragma once

#include <utility>
#include <vector>

#include "registry/registry.hpp"

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

// The config table's OID as last read (InvalidOid before): its
// invalidation makes every cached registration stale. A plain read, for
// the invalidation callback.
Oid last_config_relid() noexcept;

}  // namespace partheal::registry
