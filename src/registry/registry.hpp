// The managed tables this backend has seen, cached until a relcache
// invalidation of the parent says the table, its partitions or its
// registration changed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "partitions/key_space.hpp"
#include "registry/shape.hpp"
#include "pg/boundary.hpp"

namespace partheal::registry {

struct Config {
  int64 partition_size = 0;  // ids; 0 for a time-keyed table
  int mark_percent = 80;     // 0: create-ahead is off for the table
  int premake = 4;           // partitions kept ahead at least, made at registration
  // A time-keyed table's windows: partition_interval's fields, and the zone.
  bool by_time = false;
  int32 interval_months = 0;
  int32 interval_days = 0;
  int64 interval_us = 0;
  std::string time_zone = "UTC";
  // Whether the worker moves the rows a time-keyed table's DEFAULT holds
  // into their windows (0.6's partheal_config.drain_default; false in an
  // older catalog, until ALTER EXTENSION UPDATE).
  bool drain_default = true;
  // A time-keyed table's retention: windows whose upper bound is at or
  // before now - retention (in the table's zone) are detached, and dropped
  // unless retention_keep_table. All zero: none.
  int32 retention_months = 0;
  int32 retention_days = 0;
  int64 retention_us = 0;
  bool retention_keep_table = false;
  // An id-keyed table's retention: partitions whose upper bound is at or
  // below the sequence position minus this many ids. 0: none.
  int64 retention_ids = 0;
  // How far back before now a time-keyed table's drain makes windows for
  // late rows in DEFAULT when it has no retention (0.10's
  // partheal_config.drain_reach). All zero: the default, 30 days.
  int32 drain_reach_months = 0;
  int32 drain_reach_days = 0;
  int64 drain_reach_us = 0;
  bool has_drain_reach() const {
    return drain_reach_months != 0 || drain_reach_days != 0 || drain_reach_us != 0;
  }
  // Retention of either kind is registered.
  bool retains() const { return by_time ? has_retention() : retention_ids > 0; }
  // A time-keyed table's retention interval is set.
  bool has_retention() const {
    return retention_months != 0 || retention_days != 0 || retention_us != 0;
  }
};

struct ManagedTable {
  TableShape shape;
  Config config;
  // On a Citus worker node, a distributed table's registration read from
  // the coordinator: its heals are asked of the coordinator, and this node
  // keeps no shared state for it.
  bool registered_on_coordinator = false;

  // How the table's keys are cut into partitions: what the heal loop and
  // partheal_reserve ask "which partition covers this key" of.
  partitions::KeySpec key_spec() const;
  partitions::KeySpace key_space() const;
  // Whether the worker drains its DEFAULT partition: a time-keyed table
  // whose registration says so, while partheal.drain_default is on.
  bool drains_default() const;
};

// A registration as read at one moment. The cache hands out shared
// ownership: an entry it drops or rebuilds stays valid for whoever holds it.
using TablePtr = std::shared_ptr<const ManagedTable>;

// The registration of an opened, locked parent, or nullptr if it has none.
TablePtr lookup(Relation parent);

// The target of an append or a reservation, as INSERT resolves it: the
// caller's INSERT privilege first (42501, before any lock), then the table
// locked ROW EXCLUSIVE, then its registration (55000 when it has none).
struct Opened {
  Relation parent;
  TablePtr table;
  bool table_insert;  // INSERT on the whole table, not only on some columns
};
Opened open_for_insert(Oid relid);

// For the planner: whether relid, a partitioned table the query holds
// locked, has a registration (false also when the extension is not
// installed in this database). Reads only the config table, never the
// table's shape, and remembers the answer until the table's next relcache
// invalidation (a registration sends one, see table_registration_changed).
bool registered_for_planning(Oid relid);

// Tells every backend, at commit, that relid's registration changed: their
// plans of INSERTs into it are made again (with or without the insert gate).
void table_registration_changed(Oid relid);

// The registration of relid if this backend has it cached and current, with
// no catalog access; nullptr otherwise (then open the table and lookup()).
TablePtr cached(Oid relid);

// Counts the entries the cache has dropped: a cache keyed by the same tables
// (the append targets) drops its own entries for tables not in this one
// whenever the count moves.
uint64_t forgotten_count();
bool is_cached(Oid relid);

// The table's row in the config table, as committed now (not as the
// transaction's snapshot saw it).
std::optional<Config> configured(Oid relid);

// False while the config table is 0.4's (the library was updated, ALTER
// EXTENSION UPDATE not yet run): it has no premake, interval or zone.
bool config_has_time_columns();
// False while it is older than 0.6's: it has no drain_default or
// retention_ids.
bool config_has_drain_column();
// False while it is older than 0.10's: it has no drain_reach.
bool config_has_drain_reach_column();

// Every table registered in this database, as committed now.
std::vector<Oid> registered_tables();
// The same, or nullopt when the config table is locked (LOCK, ALTER
// EXTENSION UPDATE under way): the worker never waits for it.
std::optional<std::vector<Oid>> registered_tables_nowait();

// The schema partheal's objects live in, quoted for SQL, and its OID.
std::string extension_schema_sql();
Oid extension_schema();

// Runs f as the extension's owner, who owns the config table: the caller of
// partheal_manage may register a table without writing the config directly.
void as_extension_owner(void (*f)(void*), void* ctx);

void install_invalidation_callback();

// Tells every backend, at commit, that registrations changed.
void registrations_changed();

}  // namespace partheal::registry
