// What partheal_manage makes before it returns: the first partitions ahead.
#pragma once

#include "registry/registry.hpp"

namespace partheal::ahead {

// A time-keyed table's window holding now() and `premake` after it; an
// id-keyed table's partitions from its sequence position through `premake`
// ahead (none when premake is 0 or create-ahead is off). Made in the
// caller's transaction, so a ROLLBACK takes them back with the registration.
void make_premade(const registry::ManagedTable& table);

}  // namespace partheal::ahead
