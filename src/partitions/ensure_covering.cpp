#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "partitions/child_table.hpp"
#include "partitions/key_space.hpp"
#include "errors.hpp"
#include "partitions/catalog.hpp"
#include "partitions/ensure_covering.hpp"
#include "partitions/parent.hpp"
#include "partitions/time_zone.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/relation.hpp"
#include "pg/own_sql.hpp"
#include "pg/report.hpp"
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
#include "utils/lsyscache.h"
}

namespace partheal::partitions {

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
  Parent parent;
  int64 key_min = 0;  // the key type's own limits
  int64 key_max = 0;
  Range range;
};

Plan plan_for(Oid relid, int64 id, const KeySpace& keys, LockWait wait) {
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
  // Decided under the advisory lock, so it must see every partition
  // committed so far, not a cached view that missed one (partitions/catalog.hpp).
  refresh_partitions(rel);
  plan.parent = read_parent(rel);
  key_limits(plan.parent, &plan.key_min, &plan.key_max);
  if (OidIsValid(plan.parent.default_relid) && !has_own_partition(rel, id)) {
    // Only create-ahead gets here: a heal has no routing miss to heal.
    // Attaching would scan the DEFAULT partition under ACCESS EXCLUSIVE
    // and fail on any row it holds for the range: said, not done.
    std::string name = plan.parent.name;
    pg::guard([&] { relation_close(rel, NoLock); });
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("\"{}\" has a DEFAULT partition{}", name,
                         keys.is_time() ? "" : ", attached after it was registered"),
             "Rows without a partition of their own go to the DEFAULT partition; partheal "
             "creates no partitions while it is attached.",
             "Move its rows into partitions with partheal_attach_window and detach it, or "
             "unmanage the table.");
  }
  if (!routes(rel, id)) {
    plan.needed = true;
    // A partition whose DETACH ... CONCURRENTLY was started and not finished
    // is out of the routing but keeps its bounds until FINALIZE: the new
    // partition is cut around it, and a key inside it cannot be healed.
    const Windows windows = read_windows(rel);
    if (const std::optional<Partition>& pending = windows.pending) {
      if (contains(pending->range, id)) {
        const Oid pending_oid = pending->relid;
        const std::string name = pg::guarded_text([&] { return get_rel_name(pending_oid); });
        const std::string parent = plan.parent.name;
        const std::string schema = plan.parent.schema;
        pg::guard([&] { relation_close(rel, NoLock); });
        pg::fail(ERRCODE_INVALID_OBJECT_DEFINITION,
                 fmt::format("it would overlap partition \"{}\" of \"{}\", which is being "
                             "detached",
                             name, parent),
                 "A DETACH PARTITION ... CONCURRENTLY of it was started and not finished; its "
                 "bounds stay taken until it is.",
                 fmt::format("Finish it with ALTER TABLE {}.{} DETACH PARTITION {}.{} FINALIZE, "
                             "and the next append heals the key.",
                             pg::quoted(schema), pg::quoted(parent), pg::quoted(schema),
                             pg::quoted(name)));
      }
    }
    plan.range = keys.covering(id, windows.taken());
  }
  pg::guard([&] { relation_close(rel, NoLock); });
  return plan;
}

// LIKE, then ATTACH, as the parent's owner: never PARTITION OF.
Ensured create_and_attach(const Plan& plan, const KeySpace& keys, int64 id,
                          int caller_lock_timeout_ms) {
  const Parent& p = plan.parent;
  Ensured out;
  std::string child = free_child_name(p.namespace_oid, p.name, keys.suffix(plan.range.lower));
  out.partition = child;
  out.range = fmt::format("FROM ({}) TO ({})", keys.bound_sql(plan.range.lower),
                          keys.bound_sql(plan.range.upper));
  out.made = plan.range;
  // Citus runs the ATTACH on every worker node too (a shard per shard of
  // the parent), and the CREATE where it propagates one: their lock waits
  // there are bounded as here, and the rest of a caller's transaction
  // (partheal_manage's premake) has the caller's lock_timeout there again.
  p.citus.with_lock_bound_on_nodes(
      pg::guard([] { return LockTimeout; }), caller_lock_timeout_ms, [&] {
        pg::as_role(p.owner, [&] {
          create_child_table(p, child);
          // The bounds are integers or ISO time literals partheal computed,
          // not user text.
          pg::spi::execute(attach_partition_sql(p.schema, p.name, child, out.range),
                           SPI_OK_UTILITY);
        });
      });
  pg::report(
      LOG, 0,
      fmt::format("{} created partition \"{}.{}\" {} for {} {}", errors::kLogCreated, p.schema,
                  child, out.range, keys.is_time() ? "key" : "id", keys.key_text(id)));
  return out;
}

}  // namespace

Ensured ensure_covering(Oid relid, int64 id, const KeySpec& spec, LockWait wait) {
  const KeySpace keys = space_of(spec);
  // A heal's lock waits must outlast the deadlock check (deadlock_timeout),
  // which is what resolves a cycle through the worker (worker/requests.cpp).
  long timeout_ms = settings::ddl_lock_timeout_ms;
  if (wait == LockWait::kQueue) timeout_ms = Max(timeout_ms, DeadlockTimeout + 500);
  const int caller_lock_timeout_ms = pg::guard([] { return LockTimeout; });
  return pg::with_own_sql({true, timeout_ms}, [&] {
    take_partition_lock(relid, keys.number_of(id));
    Plan plan = plan_for(relid, id, keys, wait);
    if (!plan.needed) return Ensured{{}, {}, plan.gave_way, {}};
    return create_and_attach(plan, keys, id, caller_lock_timeout_ms);
  });
}

void log_creation_failure(Oid relid, const std::string& for_what, const PgError& e) {
  pg::report(LOG, e.sqlerrcode(),
             fmt::format("{} could not create the partition of {} {}: {}", errors::kLogCreateFailed,
                         pg::relation_label(relid), for_what, e.what()));
}

}  // namespace partheal::partitions
