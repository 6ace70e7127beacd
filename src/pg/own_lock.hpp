// A table lock a call took itself, let go while the call waits for another
// process to commit, and taken again after. partheal_append waits for the
// worker to make a missing partition; holding the parent's ROW EXCLUSIVE
// through that wait would keep the worker, queued for the parent's ACCESS
// EXCLUSIVE in a retention batch, from both: the batch times out and the
// heal waits the whole slice, on every append of a table the heals drive.
//
// PostgreSQL itself lets go of a lock early only for catalogs. It is safe
// here because the call has read and written no row of the table yet (the
// heal comes before its insert, or after the insert's subtransaction was
// rolled back), and because whatever it planned from the table's definition
// is checked again once the lock is back: its name and schema; the relcache
// keeps a relation's tuple descriptor, rules and policies at the same
// address while their content is unchanged; the triggers are compared one
// by one. A change fails the call with 40001, nothing written (an ALTER
// COLUMN ... SET STATISTICS meanwhile may count as one). A DROP of
// the table meanwhile is PostgreSQL's XX000 "deleted while still in use",
// since the call holds its relcache entry.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "pg/postgres.hpp"

extern "C" {
#include "utils/rel.h"
#include "utils/resowner.h"
}

namespace partheal::pg {

// A lock taken on a table by the current resource owner, just now.
struct OwnLock {
  Oid relid = InvalidOid;
  LOCKMODE mode = NoLock;
  ResourceOwner owner = nullptr;
};
OwnLock own_lock_taken_now(Oid relid, LOCKMODE mode);

// Runs wait() with that acquisition let go, when the current resource owner
// is still the one that took it (another owner's release would only warn);
// takes it again after, and throws 40001 if rel's definition changed
// meanwhile. Earlier acquisitions of the same lock by this transaction are
// kept: only this one is let go, so a transaction that already wrote the
// table goes on holding it. If wait() throws, the lock is not taken again:
// the error ends the (sub)transaction that took it.
void without_own_lock(const OwnLock& lock, Relation rel, const std::function<void()>& wait);

}  // namespace partheal::pg
