// The launcher: at server start, one worker per database that may have
// managed tables, so the sequence poll runs before anyone calls partheal.
#pragma once

namespace partheal::worker {

void register_launcher();

}  // namespace partheal::worker
