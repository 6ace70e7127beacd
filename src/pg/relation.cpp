#include <fmt/format.h>

#include "pg/boundary.hpp"
#include "pg/relation.hpp"

extern "C" {
#include "access/relation.h"
}

namespace partheal::pg {

Relation open_existing(Oid relid, LOCKMODE mode) {
  Relation rel = guard([&] { return try_relation_open(relid, mode); });
  if (rel == nullptr)
    fail(ERRCODE_UNDEFINED_TABLE, fmt::format("relation with OID {} does not exist", relid),
         "The table was dropped, possibly while this call waited for its lock.");
  return rel;
}

}  // namespace partheal::pg
