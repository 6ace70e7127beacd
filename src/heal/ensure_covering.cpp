#include <fmt/format.h>

#include <string>

#include "errors.hpp"
#include "heal/bounds.hpp"
#include "heal/ensure_covering.hpp"
#include "manage/shape.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/guc_scope.hpp"
#include "pg/spi.hpp"
#include "settings.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
}

namespace partheal::heal {

namespace {

// "<parent>_p<lower>", cut to fit NAMEDATALEN. A cut name gets a hash of the
// whole parent name, so two long parents sharing a prefix stay distinct.
std::string partition_name(const std::string& parent, const Bound& lower) {
  std::string suffix = partition_suffix(lower);
  const size_t limit = NAMEDATALEN - 1;
  if (parent.size() + suffix.size() <= limit) return parent + suffix;
  uint32 hash = pg::guard([&] {
    return hash_bytes(reinterpret_cast<const unsigned char*>(parent.data()),
                      static_cast<int>(parent.size()));
  });
  std::string tag = fmt::format("_{:08x}", hash);
  int room = static_cast<int>(limit - suffix.size() - tag.size());
  int keep = pg::guard(
      [&] { return pg_mbcliplen(parent.c_str(), static_cast<int>(parent.size()), room); });
  return parent.substr(0, keep) + tag + suffix;
}

void take_advisory_lock(Oid relid, int64 number) {
  // Two int4 keys: the table, and the partition number folded to 32 bits. A
  // fold collision only makes two creations queue; it cannot skip one.
  Oid types[] = {INT4OID, INT4OID};
  Datum values[] = {Int32GetDatum(static_cast<int32>(relid)),
                    Int32GetDatum(static_cast<int32>(number ^ (number >> 32)))};
  pg::spi::execute("SELECT pg_catalog.pg_advisory_xact_lock($1, $2)", SPI_OK_SELECT,
                   {2, types, values, nullptr});
}

struct Plan {
  bool needed = false;
  std::string schema;
  std::string parent;
  Oid owner = InvalidOid;
  Range range;
};

Plan plan_for(Oid relid, int64 id, int64 partition_size) {
  Relation rel = pg::open_existing(relid, AccessShareLock);
  manage::TableShape shape = manage::describe(rel);
  Plan plan;
  // Decided under the advisory lock, so it must see every partition
  // committed so far, not a cached view that missed one (heal/bounds.hpp).
  refresh_partitions(rel);
  if (!routes(rel, id)) {
    plan.needed = true;
    plan.schema = shape.schema;
    plan.parent = shape.name;
    plan.owner = rel->rd_rel->relowner;
    plan.range =
        covering_range(id, partition_size, attached_ranges(rel), shape.key_min, shape.key_max);
  }
  pg::guard([&] { relation_close(rel, NoLock); });
  return plan;
}

// Runs the DDL as the parent's owner, so the partition is theirs and the
// worker's superuser rights never reach the user's objects.
void run_as(Oid owner, const std::string& create, const std::string& attach) {
  Oid saved_user = InvalidOid;
  int saved_context = 0;
  GetUserIdAndSecContext(&saved_user, &saved_context);
  pg::guard([&] {
    SetUserIdAndSecContext(
        owner, saved_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
  });
  pg::spi::execute(create, SPI_OK_UTILITY);
  pg::spi::execute(attach, SPI_OK_UTILITY);
  SetUserIdAndSecContext(saved_user, saved_context);
}

}  // namespace

Ensured ensure_covering(Oid relid, int64 id, int64 partition_size) {
  int level = pg::enter_safe_search_path();
  pg::set_local("lock_timeout", std::to_string(settings::ddl_lock_timeout_ms));
  pg::spi::connect();
  take_advisory_lock(relid, partition_number(id, partition_size));

  Ensured out;
  Plan plan = plan_for(relid, id, partition_size);
  if (plan.needed) {
    std::string child = partition_name(plan.parent, plan.range.lower);
    out.partition = child;
    out.range =
        fmt::format("FROM ({}) TO ({})", bound_sql(plan.range.lower), bound_sql(plan.range.upper));
    // IDENTITY is left out: the child would get a sequence of its own.
    std::string create = fmt::format(
        "CREATE TABLE {0}.{1} (LIKE {0}.{2} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
        "INCLUDING INDEXES INCLUDING STORAGE INCLUDING COMMENTS INCLUDING GENERATED "
        "INCLUDING STATISTICS INCLUDING COMPRESSION)",
        pg::quoted(plan.schema), pg::quoted(child), pg::quoted(plan.parent));
    // The bounds are integers partheal computed, not user text.
    std::string attach =
        fmt::format("ALTER TABLE {0}.{1} ATTACH PARTITION {0}.{2} FOR VALUES {3}",
                    pg::quoted(plan.schema), pg::quoted(plan.parent), pg::quoted(child), out.range);
    run_as(plan.owner, create, attach);
    std::string line = fmt::format("{} created partition \"{}.{}\" {} for id {}",
                                   errors::kLogCreated, plan.schema, child, out.range, id);
    const char* text = line.c_str();
    pg::guard([&] { ereport(LOG, (errmsg_internal("%s", text))); });
  }
  pg::spi::finish();
  pg::leave_guc_level(level);
  return out;
}

}  // namespace partheal::heal
