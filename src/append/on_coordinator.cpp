#include "append/on_coordinator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "partitions/catalog.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/own_sql.hpp"
#include "pg/relation.hpp"
#include "worker/requests.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
}

namespace partheal::append {

namespace {

std::string text_value(uint64 row, int col) {
  std::optional<Datum> d = pg::spi::value(row, col);
  if (!d) return {};
  const char* s = pg::guard([&] { return TextDatumGetCString(*d); });
  return s;
}

std::string literal(const std::string& value) {
  const char* v = value.c_str();
  const char* quoted = pg::guard([&] { return quote_literal_cstr(v); });
  return quoted;
}

// The partition of key now routed to on this node, once the coordinator's
// commit has reached it: its name and bounds, for the heal's log line.
partitions::Ensured routed_here(Oid relid, int64 key, const partitions::KeySpec& spec) {
  partitions::Ensured made;
  // The appender holds the parent locked: opened with no lock of its own.
  Relation parent = pg::open_existing(relid, NoLock);
  partitions::refresh_partitions(parent);
  const partitions::KeySpace keys(spec);
  for (const partitions::Partition& p : partitions::attached_partitions(parent)) {
    if (!partitions::contains(p.range, key)) continue;
    const char* name = pg::guard([&] { return get_rel_name(p.relid); });
    made.partition = name != nullptr ? name : "?";
    made.range = fmt::format("FROM ({}) TO ({}) on the coordinator", keys.bound_sql(p.range.lower),
                             keys.bound_sql(p.range.upper));
    made.made = p.range;
  }
  pg::guard([&] { relation_close(parent, NoLock); });
  return made;
}

// Whether this database's partheal has the three-argument
// partheal_cover_for_node (0.8): Citus keeps the extension at one version
// on every node, so the coordinator's has it too. A database not updated
// yet asks with two, which the coordinator takes as it did before 0.8.
bool coordinator_takes_drawn() {
  Oid schema = registry::extension_schema();
  return pg::guard([&] {
    const char* schema_name = get_namespace_name(schema);
    if (schema_name == nullptr) return false;
    Oid argtypes[3] = {TEXTOID, TEXTARRAYOID, BOOLOID};
    return OidIsValid(LookupFuncName(list_make2(makeString(pstrdup(schema_name)),
                                                makeString(pstrdup("partheal_cover_for_node"))),
                                     3, argtypes, true));
  });
}

// A heal for a table registered on the coordinator. `drawn`: this node
// drew the key from its range of the sequence; otherwise the caller gave
// it.
partitions::Ensured make_on_coordinator(Oid relid, int64 key, const partitions::KeySpec& spec,
                                        bool drawn) {
  const char* schema = pg::guard([&] { return get_namespace_name(get_rel_namespace(relid)); });
  const char* name = pg::guard([&] { return get_rel_name(relid); });
  // Citus made partheal's schema the same on every node, and the table's
  // name is the same there.
  std::string table = fmt::format("{}.{}", pg::quoted(schema), pg::quoted(name));
  std::string command = fmt::format(
      "SELECT {}.partheal_cover_for_node({}::pg_catalog.text, ARRAY[{}]::pg_catalog.text[]{})",
      registry::extension_schema_sql(), literal(table),
      literal(partitions::KeySpace(spec).key_text(key)),
      coordinator_takes_drawn() ? (drawn ? ", true" : ", false") : "");
  std::string answer = citus::run_on_coordinator(command);
  struct Outcome {
    bool failed = false;
    ErrorFields fields;
    std::string made;
  };
  Outcome outcome = pg::with_own_sql({}, [&] {
    Oid types[] = {TEXTOID};
    const char* text = answer.c_str();
    Datum values[] = {pg::guard([&] { return CStringGetTextDatum(text); })};
    pg::spi::execute(
        "SELECT j OPERATOR(pg_catalog.->>) 'sqlstate', j OPERATOR(pg_catalog.->>) 'message', "
        "j OPERATOR(pg_catalog.->>) 'detail', j OPERATOR(pg_catalog.->>) 'hint', "
        "j OPERATOR(pg_catalog.->>) 'made' FROM (SELECT $1::pg_catalog.jsonb AS j) s",
        SPI_OK_SELECT, {1, types, values, nullptr}, true);
    Outcome o;
    std::string sqlstate = text_value(0, 1);
    o.failed = !sqlstate.empty();
    if (o.failed) {
      const char* s = sqlstate.c_str();
      o.fields.sqlerrcode = sqlstate.size() == 5 ? MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4])
                                                 : ERRCODE_INTERNAL_ERROR;
      o.fields.message = text_value(0, 2);
      o.fields.detail = text_value(0, 3);
      o.fields.hint = text_value(0, 4);
    }
    o.made = text_value(0, 5);
    return o;
  });
  if (outcome.failed) {
    std::string coordinator = citus::coordinator_address();
    outcome.fields.context = fmt::format("creating the partition on the coordinator{}",
                                         coordinator.empty() ? "" : " (" + coordinator + ")");
    throw PgError(outcome.fields);
  }
  // Nothing made there: another session had made it (or the catalog here
  // lags; the loop routes again and asks again).
  if (outcome.made == "0") return {};
  return routed_here(relid, key, spec);
}

}  // namespace

heal::MakePartition partition_maker(const registry::ManagedTable& table,
                                    const std::vector<int64>& given) {
  if (!table.registered_on_coordinator) return worker::create_covering_partition;
  auto sorted = std::make_shared<std::vector<int64>>(given);
  std::sort(sorted->begin(), sorted->end());
  return [sorted](Oid relid, int64 key, const partitions::KeySpec& spec) {
    return make_on_coordinator(relid, key, spec,
                               !std::binary_search(sorted->begin(), sorted->end(), key));
  };
}

std::string relayed_outcome(int32 made, const PgError* error) {
  return pg::with_own_sql({}, [&] {
    if (error == nullptr) {
      Oid types[] = {INT4OID};
      Datum values[] = {Int32GetDatum(made)};
      pg::spi::execute("SELECT pg_catalog.jsonb_build_object('made', $1)::pg_catalog.text",
                       SPI_OK_SELECT, {1, types, values, nullptr}, true);
      return text_value(0, 1);
    }
    const ErrorFields& f = error->fields();
    const char* state = pg::guard([&] { return unpack_sql_state(f.sqlerrcode); });
    const char* message = f.message.c_str();
    const char* detail = f.detail.c_str();
    const char* hint = f.hint.c_str();
    Oid types[] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
    Datum values[4];
    char nulls[] = {' ', ' ', f.detail.empty() ? 'n' : ' ', f.hint.empty() ? 'n' : ' ', '\0'};
    pg::guard([&] {
      values[0] = CStringGetTextDatum(state);
      values[1] = CStringGetTextDatum(message);
      values[2] = CStringGetTextDatum(detail);
      values[3] = CStringGetTextDatum(hint);
    });
    pg::spi::execute(
        "SELECT pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object('sqlstate', $1, "
        "'message', $2, 'detail', $3, 'hint', $4))::pg_catalog.text",
        SPI_OK_SELECT, {4, types, values, nulls}, true);
    return text_value(0, 1);
  });
}

}  // namespace partheal::append
