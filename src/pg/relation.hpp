// Opening a relation named by a regclass argument. The OID was resolved
// without a lock, so the relation may have been dropped by the time the lock
// is granted: that is the caller's 42P01, never relation_open's XX000.
#pragma once

#include "pg/postgres.hpp"

extern "C" {
#include "utils/rel.h"
}

namespace partheal::pg {

Relation open_existing(Oid relid, LOCKMODE mode);

}  // namespace partheal::pg
