// Sleeping inside a backend: on the process latch, so that a cancel, a
// terminate or the postmaster's death ends the wait at once.
#pragma once

#include "pg/postgres.hpp"

namespace partheal::pg {

// The wait event partheal's waits show in pg_stat_activity: wait_event_type
// "Extension", and from PostgreSQL 17 on a wait_event named after what
// partheal waits for (PartHealIdle, PartHealPause, PartHealBackOff,
// PartHealWorkerAnswer). `registered` caches it for this process.
uint32 named_wait_event(const char* name, uint32& registered);

// A short wait between two tries (a lock, a worker to stop).
void pause_ms(long ms);

// A background process's idle wait: pause_ms, then a pending SIGHUP's
// configuration reload.
void wait_for_work_ms(long ms);

// After an error in a background process's loop: a plain sleep that ends
// only on the postmaster's death, so the same error coming back at once
// makes no busy loop, and a pending cancel is not raised again here.
void back_off_ms(long ms);

}  // namespace partheal::pg
