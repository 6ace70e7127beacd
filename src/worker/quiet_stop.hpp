// A server stop ends the launcher and the workers with SIGTERM. PostgreSQL's
// die() handler then ends a background worker at its next interrupt check,
// wherever it is (a lock wait, a drain's move), which keeps a stop prompt;
// but it does so with FATAL "terminating background worker ... due to
// administrator command", a line in the server log at every stop that reads
// like a failure. That FATAL is the normal way out of these processes: this
// leaves it out of the server log, in this process only.
#pragma once

namespace partheal::worker {

// From the launcher's and each worker's main, before signals are unblocked.
void quiet_admin_shutdown();

}  // namespace partheal::worker
