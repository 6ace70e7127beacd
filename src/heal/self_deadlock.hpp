// The worker creates partitions in its own transaction. A caller whose
// transaction holds a lock that the creation needs would wait for the worker
// while the worker waits for it, until partheal.ddl_lock_timeout: refused at
// once with PH004 instead.
#pragma once

#include "registry/registry.hpp"

namespace partheal::heal {

// ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE on the parent and, for each
// foreign key the parent has or is the target of, SHARE ROW EXCLUSIVE on the
// table at the key's other end (to clone the key). Throws PH004 if this
// transaction holds a lock that conflicts with any of them.
void refuse_self_deadlock(const registry::ManagedTable& table, Relation parent);

}  // namespace partheal::heal
