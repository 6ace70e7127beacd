// The ProcessUtility hook that lets DROP DATABASE through a partheal worker.
#pragma once

namespace partheal::worker {

void install_drop_database_hook();

}  // namespace partheal::worker
