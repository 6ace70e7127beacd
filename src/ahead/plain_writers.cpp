// For writers that do not call partheal_append (ORMs, COPY, INSERT ...
// SELECT): partheal_nextval, the id default that checks the mark as an
// append does and ends in the one create-ahead queue. (partheal_reserve,
// the heal's cover-only mode, is append/reserve.cpp.)
#include <fmt/format.h>

#include <vector>

#include "ahead/headroom.hpp"
#include "ahead/mark.hpp"
#include "ahead/next_partition_wait.hpp"
#include "pg/sequence.hpp"
#include "partitions/key_space.hpp"
#include "registry/registry.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/relation.hpp"
#include "settings.hpp"

extern "C" {
#include "access/relation.h"
#include "access/xact.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "tcop/utility.h"
}

namespace partheal::ahead {

namespace {

bool may_insert(Oid relid) {
  return pg::guard(
      [&] { return pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) == ACLCHECK_OK; });
}

// A registration whose id sequence is `sequence`; nullptr when the table is
// not registered. Cheap when this backend has the table cached.
registry::TablePtr registration(Oid relid) {
  registry::TablePtr table = registry::cached(relid);
  if (table != nullptr) return table;
  // Checked before any lock: a role that may not insert into the table
  // must not be able to lock it (and so queue its owner's DDL) through us.
  if (!may_insert(relid)) return nullptr;
  Relation rel = pg::open_existing(relid, AccessShareLock);
  table = registry::lookup(rel);
  pg::guard([&] { relation_close(rel, NoLock); });
  return table;
}

[[noreturn]] void null_argument(const char* name, const char* signature) {
  pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, fmt::format("{} must not be NULL", name), {}, signature);
}

}  // namespace

}  // namespace partheal::ahead

using namespace partheal;

// partheal_nextval(parent regclass, sequence regclass) RETURNS bigint
PARTHEAL_SQL_FUNCTION(partheal_nextval) {
  constexpr const char* kSignature =
      "partheal_nextval(parent regclass, sequence regclass) draws the next id of the table's "
      "sequence; use it as the id column's default.";
  if (PG_ARGISNULL(0)) ahead::null_argument("parent", kSignature);
  if (PG_ARGISNULL(1)) ahead::null_argument("sequence", kSignature);
  Oid relid = PG_GETARG_OID(0);
  Oid sequence = PG_GETARG_OID(1);
  // Every refusal comes before the draw: a sequence does not give back an
  // id drawn by a call that then failed.
  if (!pg::guard([&] { return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(sequence)); }))
    pg::fail(ERRCODE_UNDEFINED_TABLE, fmt::format("relation with OID {} does not exist", sequence));
  registry::TablePtr table = settings::preloaded() ? ahead::registration(relid) : nullptr;
  // A caller who may not insert into the table learns nothing about it:
  // the same plain nextval as for a table that is not registered.
  if (table != nullptr && table->shape.sequence != sequence && ahead::may_insert(relid)) {
    const char* name = pg::guard([&] { return get_rel_name(sequence); });
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("\"{}\" is not the id sequence of \"{}\"", name != nullptr ? name : "?",
                         table->shape.name),
             {}, "Pass the sequence the table's id column draws from.");
  }
  // nextval's own privilege check: USAGE or UPDATE on the sequence.
  int64 id = pg::guard([&] { return nextval_internal(sequence, true); });
  // Unregistered: a plain nextval, so a default left behind keeps working.
  if (table == nullptr || table->shape.sequence != sequence) return Int64GetDatum(id);
  const int64 size = table->config.partition_size;
  const int percent = table->config.mark_percent;
  if (percent == 0) return Int64GetDatum(id);
  int64 increment = table->shape.sequence_increment;
  // Only a caller who may insert into the table asks for its partitions.
  if (ahead::mark_target(id, increment, size, percent) && ahead::may_insert(relid))
    (void)ahead::after_draw(relid, id, increment, table->config.premake);
  // A burst faster than the worker: past the mark, the next draws' partition
  // must exist before they are drawn (ahead/next_partition_wait.hpp).
  ahead::wait_for_next_partition(*table, id);
  return Int64GetDatum(id);
}
