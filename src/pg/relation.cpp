#include <fmt/format.h>

#include "pg/boundary.hpp"
#include "pg/relation.hpp"

extern "C" {
#include "access/relation.h"
#include "access/xact.h"
#include "utils/lsyscache.h"
}

namespace partheal::pg {

Relation open_existing(Oid relid, LOCKMODE mode) {
  Relation rel = guard([&] { return try_relation_open(relid, mode); });
  if (rel == nullptr)
    fail(ERRCODE_UNDEFINED_TABLE, fmt::format("relation with OID {} does not exist", relid),
         "The table was dropped, possibly while this call waited for its lock.");
  return rel;
}

std::string relation_label(Oid relid) {
  struct Names {
    const char* schema = nullptr;
    const char* table = nullptr;
  };
  bool own = !IsTransactionState();
  Names names = guard([&] {
    if (own) StartTransactionCommand();
    Names n;
    n.table = get_rel_name(relid);
    Oid ns = n.table != nullptr ? get_rel_namespace(relid) : InvalidOid;
    n.schema = ns != InvalidOid ? get_namespace_name(ns) : nullptr;
    return n;
  });
  std::string label = names.table != nullptr && names.schema != nullptr
                          ? fmt::format("\"{}.{}\"", names.schema, names.table)
                          : fmt::format("relation {}", relid);
  if (own) guard([] { CommitTransactionCommand(); });
  return label;
}

}  // namespace partheal::pg
