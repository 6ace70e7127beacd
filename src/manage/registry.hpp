// The managed tables this backend has seen, cached until a relcache
// invalidation of the parent says the table, its partitions or its
// registration changed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "manage/shape.hpp"
#include "pg/boundary.hpp"

namespace partheal::manage {

struct Config {
  int64 partition_size = 0;
  int mark_percent = 80;  // 0: create-ahead is off for the table
};

struct ManagedTable {
  TableShape shape;
  Config config;
};

// The registration of an opened, locked parent, or nullptr if it has none.
// The pointer is valid until the next invalidation is processed.
const ManagedTable* lookup(Relation parent);

// The table's row in the config table, read with SPI.
std::optional<Config> configured(Oid relid);

// Every table registered in this database, read with SPI.
std::vector<Oid> registered_tables();

// The schema partheal's objects live in, quoted for SQL.
std::string extension_schema_sql();

// Runs f as the extension's owner, who owns the config table: the caller of
// partheal_manage may register a table without writing the config directly.
void as_extension_owner(void (*f)(void*), void* ctx);

void install_invalidation_callback();

// Tells every backend, at commit, that registrations changed.
void registrations_changed();

}  // namespace partheal::manage
