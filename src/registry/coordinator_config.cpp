// On a Citus worker node: the registration of a distributed table, which
// lives in the coordinator's partheal_config (Citus copies the extension to
// every node, not its rows). Read over Citus's connection to the
// coordinator, as the current user, who may read partheal_config there as
// here.
#include <fmt/format.h>

#include <optional>
#include <string>

#include "registry/config_table_internal.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/own_sql.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace partheal::registry {

std::optional<Config> coordinator_config(Relation parent) {
  Oid relid = RelationGetRelid(parent);
  const char* schema = pg::guard([&] { return get_namespace_name(RelationGetNamespace(parent)); });
  const char* name = RelationGetRelationName(parent);
  std::string table = fmt::format("{}.{}", pg::quoted(schema), pg::quoted(name));
  const char* table_text = table.c_str();
  std::string table_literal = pg::guard([&] { return quote_literal_cstr(table_text); });
  const std::string config_table = extension_schema_sql() + ".partheal_config";
  // The row as JSON without its parent, whose OID is the coordinator's.
  std::string command = fmt::format(
      "SELECT (pg_catalog.row_to_json(c)::pg_catalog.jsonb OPERATOR(pg_catalog.-) "
      "'parent')::pg_catalog.text FROM {} c WHERE c.parent OPERATOR(pg_catalog.=) "
      "{}::pg_catalog.regclass",
      config_table, table_literal);
  std::string answer = citus::run_on_coordinator(command);
  if (answer.empty()) return std::nullopt;
  // Read back into a row of this node's partheal_config type, with this
  // node's OID of the table, and parsed as the local rows are.
  return pg::with_own_sql({}, [&] {
    Oid types[] = {TEXTOID, OIDOID};
    const char* text = answer.c_str();
    Datum values[] = {pg::guard([&] { return CStringGetTextDatum(text); }),
                      ObjectIdGetDatum(relid)};
    pg::spi::execute(fmt::format("SELECT (pg_catalog.jsonb_populate_record(NULL::{}, "
                                 "$1::pg_catalog.jsonb OPERATOR(pg_catalog.||) "
                                 "pg_catalog.jsonb_build_object('parent', $2))).*",
                                 config_table),
                     SPI_OK_SELECT, {2, types, values, nullptr}, true);
    HeapTuple tuple =
        pg::guard([] { return SPI_processed == 1 ? SPI_tuptable->vals[0] : nullptr; });
    TupleDesc desc = pg::guard([] { return SPI_tuptable->tupdesc; });
    return tuple == nullptr ? std::nullopt : config_of_tuple(tuple, desc);
  });
}

}  // namespace partheal::registry
