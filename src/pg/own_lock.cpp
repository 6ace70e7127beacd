#include "pg/own_lock.hpp"

#include <fmt/format.h>

#include <string>

#include "pg/boundary.hpp"

extern "C" {
#include "storage/lmgr.h"
#include "utils/reltrigger.h"
}

namespace partheal::pg {

namespace {

// What a call plans from a table's definition and a DDL could change while
// its lock was let go. The pointers are the relcache's own: kept while the
// content is equal, replaced when it changes.
struct Trigger {
  Oid oid;
  Oid function;
  int16 type;    // row or statement, before or after, which events
  char enabled;  // CREATE OR REPLACE TRIGGER keeps the oid
  bool operator==(const Trigger& o) const {
    return oid == o.oid && function == o.function && type == o.type && enabled == o.enabled;
  }
};

struct Definition {
  // The INSERT names the table: a rename or a swap of names would send the
  // rows elsewhere.
  std::string name;
  Oid schema = InvalidOid;
  TupleDesc columns = nullptr;  // columns, defaults, CHECK and NOT NULL
  const void* rules = nullptr;
  const void* policies = nullptr;
  bool row_security = false;
  bool force_row_security = false;
  std::vector<Trigger> triggers;

  bool operator==(const Definition& o) const {
    return name == o.name && schema == o.schema && columns == o.columns && rules == o.rules &&
           policies == o.policies && row_security == o.row_security &&
           force_row_security == o.force_row_security && triggers == o.triggers;
  }
};

// Reads the open relation's fields only: no PostgreSQL call.
Definition definition_of(Relation rel) {
  Definition d;
  d.name = RelationGetRelationName(rel);
  d.schema = RelationGetNamespace(rel);
  d.columns = RelationGetDescr(rel);
  d.rules = rel->rd_rules;
  d.policies = rel->rd_rsdesc;
  d.row_security = rel->rd_rel->relrowsecurity;
  d.force_row_security = rel->rd_rel->relforcerowsecurity;
  if (rel->trigdesc != nullptr)
    for (int i = 0; i < rel->trigdesc->numtriggers; ++i) {
      const ::Trigger& t = rel->trigdesc->triggers[i];
      d.triggers.push_back({t.tgoid, t.tgfoid, t.tgtype, t.tgenabled});
    }
  return d;
}

}  // namespace

OwnLock own_lock_taken_now(Oid relid, LOCKMODE mode) {
  return OwnLock{relid, mode, CurrentResourceOwner};
}

void without_own_lock(const OwnLock& lock, Relation rel, const std::function<void()>& wait) {
  if (lock.owner == nullptr || lock.owner != CurrentResourceOwner) {
    wait();
    return;
  }
  const Definition before = definition_of(rel);
  const Oid relid = lock.relid;
  const LOCKMODE mode = lock.mode;
  guard([&] { UnlockRelationOid(relid, mode); });
  // An error leaves without the lock: it ends the (sub)transaction that
  // took it, whose abort would have let go of it anyway, and after an
  // ERROR nothing but that abort may touch the lock manager.
  wait();
  // Waits behind a DDL that was queued meanwhile, as a new statement would;
  // then takes in the invalidations, which rebuild rel in place.
  guard([&] { LockRelationOid(relid, mode); });
  if (!(definition_of(rel) == before))
    fail(ERRCODE_T_R_SERIALIZATION_FAILURE,
         fmt::format("the definition of \"{}\" changed while this append waited for its partition",
                     before.name),
         "Nothing was inserted by this call.",
         "Run the append again: it plans from the table as it is now.");
}

}  // namespace partheal::pg
