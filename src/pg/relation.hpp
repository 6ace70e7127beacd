// Opening a relation named by a regclass argument. The OID was resolved
// without a lock, so the relation may have been dropped by the time the lock
// is granted: that is the caller's 42P01, never relation_open's XX000.
#pragma once

#include <string>

#include "pg/postgres.hpp"

extern "C" {
#include "utils/rel.h"
}

namespace partheal::pg {

Relation open_existing(Oid relid, LOCKMODE mode);

// How a log line names a table: "schema.table", as PHL01 and PHL02 do, or
// "relation <oid>" once it is gone. Outside a transaction (the worker
// between its own) it opens a short one to read the catalog.
std::string relation_label(Oid relid);

}  // namespace partheal::pg
