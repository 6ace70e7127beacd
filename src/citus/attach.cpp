#include "citus/attach.hpp"

#include <algorithm>
#include <optional>

#include "pg/boundary.hpp"
#include "pg/citus.hpp"
#include "pg/guc_level.hpp"
#include "pg/own_sql.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/builtins.h"
}

namespace partheal::citus {

void distribute_for_attach(Oid table, Oid parent) {
  // Citus's own test of a distributed table: hash, or a single shard (no
  // key) in a colocation group; a Citus local table has no group, and a
  // reference table's replication model is two-phase.
  std::optional<pg::citus::DistRow> row = pg::citus::dist_row(parent);
  if (!row || row->repmodel == 't' ||
      !(row->method == 'h' || (row->method == 'n' && row->colocation != 0)))
    return;
  const bool keyed = row->method == 'h';
  pg::with_own_sql({}, [&] {
    Oid types[] = {OIDOID, OIDOID, TEXTOID};
    const char* key = row->key.c_str();
    Datum values[] = {ObjectIdGetDatum(table), ObjectIdGetDatum(parent),
                      keyed ? pg::guard([&] { return CStringGetTextDatum(key); }) : Datum(0)};
    const char nulls[] = {' ', ' ', keyed ? ' ' : 'n'};
    // The arguments Citus's ATTACH passes: the parent's column by name (the
    // table is LIKE the parent, its attnums may differ), or NULL.
    pg::spi::execute(
        "SELECT pg_catalog.create_distributed_table($1, "
        "pg_catalog.column_to_column_name($2, $3), colocate_with => "
        "$2::pg_catalog.regclass::pg_catalog.text)",
        SPI_OK_SELECT, {3, types, values, nulls});
    // create_distributed_table returns without a word on some NULL
    // arguments: a table left plain would be distributed by the ATTACH,
    // its rows left on the coordinator's disk.
    if (!pg::citus::is_citus_table(table))
      pg::fail(ERRCODE_INTERNAL_ERROR,
               "partheal could not distribute the window's table before attaching it");
    pg::spi::execute("SELECT pg_catalog.truncate_local_data_after_distributing_table($1)",
                     SPI_OK_SELECT, {1, types, values, nullptr});
  });
}

void sequential_if_long_shard_names(Oid parent, const std::string& partition_name) {
  // Citus names a shard <table>_<shard id>, cut to 63 bytes with a hash
  // when longer: two shards of a node then share a name's prefix, and their
  // creation on parallel connections can wait on each other's catalog rows
  // (Citus's ATTACH switches to sequential mode for that). Shard ids have
  // 6 digits from the start, 10 at the most here.
  constexpr size_t kShardSuffix = 1 + 10;
  size_t longest = partition_name.size();
  pg::with_own_sql({}, [&] {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(parent)};
    pg::spi::execute(
        "SELECT pg_catalog.max(pg_catalog.octet_length(c.relname::pg_catalog.text)) FROM "
        "pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid "
        "OPERATOR(pg_catalog.=) i.inhrelid WHERE i.inhparent OPERATOR(pg_catalog.=) $1",
        SPI_OK_SELECT, {1, types, values, nullptr}, true);
    std::optional<Datum> d = pg::spi::value(0, 1);
    if (d) longest = std::max(longest, static_cast<size_t>(DatumGetInt32(*d)));
  });
  if (longest + kShardSuffix >= NAMEDATALEN - 1)
    pg::set_local("citus.multi_shard_modify_mode", "sequential");
}

}  // namespace partheal::citus
