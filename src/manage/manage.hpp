// partheal_manage's one dependency on create-ahead, inverted: registration
// makes the first partitions ahead before it returns, and how is
// create-ahead's (ahead/premake), hooked in at _PG_init, so that manage/
// needs nothing beside it.
#pragma once

#include "registry/registry.hpp"

namespace partheal::manage {

// Makes the partitions a just-registered table needs ahead, in the caller's
// transaction. Throws PgError.
using MakeAhead = void (*)(const registry::ManagedTable& table);

void set_make_ahead(MakeAhead make);

}  // namespace partheal::manage
