// What the gate does not serve: an UPDATE that moves a row into a missing
// partition, and MERGE's INSERT. ModifyTable routes those rows itself, with
// no plan node under it that sees the new key; partheal gives them its own
// clear error instead of PostgreSQL's bare "no partition of relation".
#include <fmt/format.h>

#include <cstring>
#include <string>

#include "gate/gate_internal.hpp"
#include "pg/boundary.hpp"
#include "registry/registry.hpp"

extern "C" {
#include "utils/builtins.h"
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
bool routing_miss_at(const ErrorData* e, const MoveTarget& target) {
  return e->sqlerrcode == ERRCODE_CHECK_VIOLATION && e->constraint_name == nullptr &&
         e->table_name != nullptr && e->schema_name != nullptr &&
         strcmp(e->table_name, NameStr(target.table)) == 0 &&
         strcmp(e->schema_name, NameStr(target.schema)) == 0;
}

void refuse(const ErrorData* e, const MoveTarget& target, CmdType operation) {
  if (!target.registered || !routing_miss_at(e, target)) return;
  const bool merge = operation == CMD_MERGE;
  pg::fail(ERRCODE_CHECK_VIOLATION,
           fmt::format("no partition of \"{}\" for a row {}", NameStr(target.table),
                       merge ? "MERGE inserts" : "the UPDATE moves"),
           text(e->detail),
           fmt::format("partheal heals plain INSERTs and partheal_append, not {}: insert a row "
                       "with that key first (that makes its partition), then run the statement "
                       "again.",
                       merge ? "MERGE" : "an UPDATE that moves rows"));
}

MoveTarget read_target(Oid relid) {
  MoveTarget target{};
  target.registered = registry::registered_for_planning(relid);
  if (!target.registered) return target;
  pg::guard([&] {
    const char* name = get_rel_name(relid);
    const char* schema = get_namespace_name(get_rel_namespace(relid));
    namestrcpy(&target.table, name != nullptr ? name : "");
    namestrcpy(&target.schema, schema != nullptr ? schema : "");
  });
  return target;
}

}  // namespace

MoveTarget move_target_of(Oid relid) {
  MoveTarget target{};
  pg::entry([&] { target = read_target(relid); });
  return target;
}

void refuse_unhealed_route(const ErrorData* error, const MoveTarget& target, CmdType operation) {
  pg::entry([&] { refuse(error, target, operation); });
}

}  // namespace partheal::gate
