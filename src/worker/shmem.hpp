// The worker modules' shared memory, laid out in one place: each module
// (heal requests, the create-ahead queue, the databases) says how much it
// needs and initialises its own part; nothing else touches their layout.
#pragma once

namespace partheal::worker {

// From shmem_request_hook and shmem_startup_hook (inside pg::entry).
void request_shared_memory();
void init_shared_memory();

}  // namespace partheal::worker
