#include <fmt/format.h>

#include <optional>
#include <set>
#include <string>

#include "errors.hpp"
#include "heal/self_deadlock.hpp"
#include "pg/boundary.hpp"
#include "pg/citus.hpp"
#include "pg/compat.hpp"
#include "pg/relation.hpp"

extern "C" {
#include "access/genam.h"
#include "miscadmin.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_constraint.h"
#include "nodes/pg_list.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace partheal::heal {

namespace {

// The tables at the other end of the parent's foreign keys, both ways, the
// parent itself for a key to itself. Read only when a heal is about to run,
// so the scan of pg_constraint is rare.
std::set<Oid> foreign_key_partners(Oid parent) {
  // Gathered in a PostgreSQL List inside the guard (nothing there may own
  // C++ objects), copied into the set outside it.
  List* found = pg::guard([&] {
    List* oids = NIL;
    Relation rel = table_open(ConstraintRelationId, AccessShareLock);
    SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, nullptr, 0, nullptr);
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
      auto* con = reinterpret_cast<Form_pg_constraint>(GETSTRUCT(tuple));
      if (con->contype != CONSTRAINT_FOREIGN) continue;
      if (con->conrelid == parent) oids = lappend_oid(oids, con->confrelid);
      if (con->confrelid == parent) oids = lappend_oid(oids, con->conrelid);
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return oids;
  });
  std::set<Oid> partners;
  for (int i = 0; i < list_length(found); ++i) partners.insert(list_nth_oid(found, i));
  pg::guard([&] { list_free(found); });
  return partners;
}

// The strongest mode this transaction holds on relid that conflicts with
// `needed`; NoLock if none does.
LOCKMODE conflicting_mode_held(Oid relid, LOCKMODE needed) {
  return pg::guard([&] {
    LOCKTAG tag;
    SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
    for (LOCKMODE mode = MaxLockMode; mode > NoLock; --mode)
      if (DoLockModesConflict(mode, needed) && pg::compat::lock_held_by_me(&tag, mode)) return mode;
    return static_cast<LOCKMODE>(NoLock);
  });
}

[[noreturn]] void refuse(const registry::ManagedTable& table, Oid held_on, LOCKMODE held,
                         LOCKMODE needed, const std::string& why) {
  std::string parent = pg::relation_label(table.shape.relid);
  std::string other = pg::relation_label(held_on);
  const char* held_name = GetLockmodeName(DEFAULT_LOCKMETHOD, held);
  const char* needed_name = GetLockmodeName(DEFAULT_LOCKMETHOD, needed);
  pg::fail(errors::kHealLockConflict,
           fmt::format("cannot create a partition of {} while this transaction holds a lock on "
                       "{} that partition creation needs",
                       parent, other),
           fmt::format("This transaction holds {} on {}; attaching a partition takes {} on it{}.",
                       held_name, other, needed_name, why),
           held_on == table.shape.relid
               ? "Append before taking the stronger lock, or create the partition yourself."
               : fmt::format("Append to {} before writing to {} in the transaction, or create "
                             "its partitions in an earlier transaction (partheal_reserve).",
                             parent, other));
}

}  // namespace

void refuse_self_deadlock(const registry::ManagedTable& table, Relation parent) {
  Oid relid = RelationGetRelid(parent);
  // A Citus table's partition is created and distributed by the worker,
  // which takes Citus's own locks too: one this transaction holds (in the
  // middle of create_distributed_table, a shard move, a rebalance,
  // citus_add_node) would hold the worker until a timeout.
  if (pg::citus::is_citus_table(relid))
    if (std::optional<std::string> held = pg::citus::citus_lock_held())
      pg::fail(errors::kHealLockConflict,
               fmt::format("cannot create a partition of {} while this transaction holds a lock "
                           "of Citus's that distributing the partition needs",
                           pg::relation_label(relid)),
               fmt::format("This transaction holds {}; the worker that creates and distributes "
                           "the partition takes Citus's colocation and shard locks.",
                           *held),
               "Append in a transaction of its own, before or after the Citus operation, or "
               "create the partitions in an earlier transaction (partheal_reserve).");
  if (LOCKMODE held = conflicting_mode_held(relid, ShareUpdateExclusiveLock); held != NoLock)
    refuse(table, relid, held, ShareUpdateExclusiveLock, "");
  for (Oid partner : foreign_key_partners(relid)) {
    LOCKMODE held = conflicting_mode_held(partner, ShareRowExclusiveLock);
    if (held == NoLock) continue;
    if (partner == relid)
      pg::fail(errors::kHealLockConflict,
               fmt::format("cannot create a partition of {} from an append: it has a foreign key "
                           "to itself",
                           pg::relation_label(relid)),
               "Attaching a partition to a table with a foreign key to itself takes SHARE ROW "
               "EXCLUSIVE on the table, which the append's own ROW EXCLUSIVE lock holds off.",
               "Have its partitions created ahead: keep create-ahead on, whose worker attaches "
               "between writers' transactions; or create them yourself.");
    refuse(table, partner, held, ShareRowExclusiveLock, ", to clone a foreign key");
  }
}

}  // namespace partheal::heal
