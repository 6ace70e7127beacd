// The launcher: one per server, for the server's life. It starts, watches and
// stops the per-database workers (worker/databases.hpp), so the sequence
// poll runs before anyone calls partheal, and a worker that exits, for any
// reason, runs again where it should.
#pragma once

namespace partheal::worker {

void register_launcher();

}  // namespace partheal::worker
