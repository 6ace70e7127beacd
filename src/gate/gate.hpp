// The insert gate: plain INSERTs into a managed table heal in the same
// statement (see README.md in this folder).
#pragma once

namespace partheal::gate {

// Registers the gate's plan node and hooks the planner and the executor's
// start. Called once, from _PG_init of a preloaded library.
void install();

}  // namespace partheal::gate
