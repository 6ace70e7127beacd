// What the gate does not serve: an UPDATE that moves a row into a missing
// partition, and MERGE's INSERT. ModifyTable routes those rows itself, with
// no plan node under it that sees the new key; partheal gives them its own
// clear error instead of PostgreSQL's bare "no partition of relation".
#include <fmt/format.h>

#include <string>

#include "gate/gate_internal.hpp"
#include "pg/boundary.hpp"
#include "registry/registry.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "utils/lsyscache.h"
}

namespace partheal::gate {

namespace {

std::string text(const char* s) {
  return s == nullptr ? std::string() : std::string(s);
}

// Tuple routing's miss names the partitioned table it failed at, and no
// constraint (a CHECK violation names its constraint; a partition bound
// failure names a leaf), as heal::routing_miss tells them apart.
bool routing_miss_at(const ErrorData* e, Oid parent) {
  if (e->sqlerrcode != ERRCODE_CHECK_VIOLATION || e->constraint_name != nullptr ||
      e->table_name == nullptr || e->schema_name == nullptr)
    return false;
  const char* schema = e->schema_name;
  const char* table = e->table_name;
  Oid rel = pg::guard([&] {
    Oid ns = get_namespace_oid(schema, true);
    return ns == InvalidOid ? InvalidOid : get_relname_relid(table, ns);
  });
  return rel == parent;
}

void refuse(const ErrorData* e, Oid parent, CmdType operation) {
  if (!routing_miss_at(e, parent) || registry::lookup_for_planning(parent) == nullptr) return;
  const std::string name = pg::guarded_text([&] { return get_rel_name(parent); });
  const bool merge = operation == CMD_MERGE;
  pg::fail(ERRCODE_CHECK_VIOLATION,
           fmt::format("no partition of \"{}\" for a row {}", name,
                       merge ? "MERGE inserts" : "the UPDATE moves"),
           text(e->detail),
           fmt::format("partheal heals plain INSERTs and partheal_append, not {}: insert a row "
                       "with that key first (that makes its partition), then run the statement "
                       "again.",
                       merge ? "MERGE" : "an UPDATE that moves rows"));
}

}  // namespace

void refuse_unhealed_route(const ErrorData* error, Oid parent, CmdType operation) {
  pg::entry([&] { refuse(error, parent, operation); });
}

}  // namespace partheal::gate
