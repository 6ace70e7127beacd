#include <fmt/format.h>

#include <string>

#include "ddl/child_table.hpp"
#include "errors.hpp"
#include "heal/bounds.hpp"
#include "heal/ensure_covering.hpp"
#include "manage/shape.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/guc_scope.hpp"
#include "pg/security.hpp"
#include "pg/spi.hpp"
#include "settings.hpp"

extern "C" {
#include "access/relation.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
}

namespace partheal::heal {

namespace {

// partheal's own advisory lock class: pg_locks shows it as an advisory lock
// with objsubid 20552 ("PH"), database, classid = table, objid = partition
// number folded to 32 bits. pg_advisory_lock() uses classes 1 and 2, so no
// application lock can ever collide with it. A fold collision only makes
// two creations queue; it cannot skip one.
constexpr uint16 kLockClass = 0x5048;

void take_partition_lock(Oid relid, int64 number) {
  pg::guard([&] {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, relid, static_cast<uint32>(number ^ (number >> 32)),
                         kLockClass);
    (void)LockAcquire(&tag, ExclusiveLock, false, false);
  });
}

struct Plan {
  bool gave_way = false;
  bool needed = false;
  std::string schema;
  Oid namespace_oid = InvalidOid;
  std::string parent;
  Oid owner = InvalidOid;
  Range range;
};

Plan plan_for(Oid relid, int64 id, int64 partition_size, LockWait wait) {
  Plan plan;
  // SHARE UPDATE EXCLUSIVE, which ATTACH takes anyway, before deciding:
  // it waits out any partition DDL on the parent in flight, partheal's or
  // anyone's, so the decision sees what that DDL committed. Giving way, it
  // is asked for without waiting (and not granted while anyone queues for
  // a lock it conflicts with).
  if (wait == LockWait::kGiveWay &&
      !pg::guard([&] { return ConditionalLockRelationOid(relid, ShareUpdateExclusiveLock); })) {
    plan.gave_way = true;
    return plan;
  }
  Relation rel =
      pg::open_existing(relid, wait == LockWait::kGiveWay ? NoLock : ShareUpdateExclusiveLock);
  manage::TableShape shape = manage::describe(rel);
  // Decided under the advisory lock, so it must see every partition
  // committed so far, not a cached view that missed one (heal/bounds.hpp).
  refresh_partitions(rel);
  if (shape.has_default_partition && !has_own_partition(rel, id)) {
    // Only create-ahead gets here: a heal has no routing miss to heal.
    // Attaching would scan the DEFAULT partition under ACCESS EXCLUSIVE
    // and fail on any row it holds for the range: said, not done.
    const char* name = shape.name.c_str();
    pg::guard([&] { relation_close(rel, NoLock); });
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("\"{}\" has a DEFAULT partition, attached after it was registered", name),
             "Rows without a partition of their own go to the DEFAULT partition; partheal "
             "creates no partitions while it is attached.",
             "Move its rows into partitions with partheal_attach_window and detach it, or "
             "unmanage the table.");
  }
  if (!routes(rel, id)) {
    plan.needed = true;
    plan.schema = shape.schema;
    plan.namespace_oid = RelationGetNamespace(rel);
    plan.parent = shape.name;
    plan.owner = rel->rd_rel->relowner;
    plan.range =
        covering_range(id, partition_size, attached_ranges(rel), shape.key_min, shape.key_max);
  }
  pg::guard([&] { relation_close(rel, NoLock); });
  return plan;
}

}  // namespace

Ensured ensure_covering(Oid relid, int64 id, int64 partition_size, LockWait wait) {
  int level = pg::enter_safe_search_path();
  // A heal's lock waits must outlast the deadlock check (deadlock_timeout),
  // which is what resolves a cycle through the worker (worker/requests.cpp).
  int timeout_ms = settings::ddl_lock_timeout_ms;
  if (wait == LockWait::kQueue) timeout_ms = Max(timeout_ms, DeadlockTimeout + 500);
  pg::set_local("lock_timeout", std::to_string(timeout_ms));
  pg::spi::connect();
  take_partition_lock(relid, partition_number(id, partition_size));

  Ensured out;
  Plan plan = plan_for(relid, id, partition_size, wait);
  out.gave_way = plan.gave_way;
  if (plan.needed) {
    std::string child =
        ddl::free_child_name(plan.namespace_oid, plan.parent, partition_suffix(plan.range.lower));
    out.partition = child;
    out.range =
        fmt::format("FROM ({}) TO ({})", bound_sql(plan.range.lower), bound_sql(plan.range.upper));
    // The bounds are integers partheal computed, not user text.
    std::string attach =
        fmt::format("ALTER TABLE {0}.{1} ATTACH PARTITION {0}.{2} FOR VALUES {3}",
                    pg::quoted(plan.schema), pg::quoted(plan.parent), pg::quoted(child), out.range);
    pg::as_role(plan.owner, [&] {
      ddl::create_child_table(relid, plan.schema, child, plan.parent);
      pg::spi::execute(attach, SPI_OK_UTILITY);
    });
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
