#include "partitions/attach_locks.hpp"

#include <set>

#include "pg/boundary.hpp"
#include "pg/compat.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_constraint.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
}

namespace partheal::partitions {

namespace {

// The tables at the other end of the parent's foreign keys, both ways, the
// parent itself for a key to itself.
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

}  // namespace

std::optional<HeldAttachLock> held_attach_lock_conflict(Oid parent) {
  if (LOCKMODE held = conflicting_mode_held(parent, ShareUpdateExclusiveLock); held != NoLock)
    return HeldAttachLock{parent, held, ShareUpdateExclusiveLock};
  for (Oid partner : foreign_key_partners(parent))
    if (LOCKMODE held = conflicting_mode_held(partner, ShareRowExclusiveLock); held != NoLock)
      return HeldAttachLock{partner, held, ShareRowExclusiveLock};
  return std::nullopt;
}

}  // namespace partheal::partitions
