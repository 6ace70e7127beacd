// A worker node's way to its Citus coordinator, where a Citus table's
// registration lives: the appends of a worker node read it there.
#pragma once

#include <string>

namespace partheal::citus {

// The coordinator as this worker node's metadata names it, "host:port";
// empty when this node does not know it.
std::string coordinator_address();

// Runs one SQL command on the coordinator, over a connection of Citus's of
// its own: its own transaction, committed before this returns, as the
// current user; its one value, as text. A failure comes back as 08000 with
// the message's first line (Citus relays no SQLSTATE); PH006 when this node
// knows no coordinator.
std::string run_on_coordinator(const std::string& command);

}  // namespace partheal::citus
