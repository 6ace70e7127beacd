// Errors Citus raises on a shard's behalf, relayed to the coordinator with
// a shard's SQLSTATE, message, detail, hint and context only (and a
// multi-row INSERT's, sent as COPY, without even the SQLSTATE: XX000): a
// routing miss at the parent's shard and a CHECK violation there look the
// same, and no table or schema is named.
#pragma once

#include <string>

#include "pg/postgres.hpp"

namespace partheal::citus {

// Whether an error was relayed from a shard of `parent`, by where it was
// raised (the ErrorData's function name: Citus's two relaying functions),
// with a SQLSTATE a routing miss can come back as. Only a table in Citus's
// metadata has shards: for any other, false.
bool relayed_from_shard(const std::string& funcname, int sqlerrcode, Oid parent);

}  // namespace partheal::citus
