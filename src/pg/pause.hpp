// Sleeping inside a backend: on the process latch, so that a cancel, a
// terminate or the postmaster's death ends the wait at once.
#pragma once

namespace partheal::pg {

void pause_ms(long ms);

}  // namespace partheal::pg
