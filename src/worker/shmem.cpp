#include "worker/shmem.hpp"

#include "pg/boundary.hpp"
#include "worker/ahead_queue.hpp"
#include "worker/back_offs.hpp"
#include "worker/databases.hpp"
#include "worker/requests.hpp"

extern "C" {
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

namespace partheal::worker {

namespace {

// One struct per module, each under its own name in pg_shmem_allocations.
struct Part {
  const char* name;
  Size (*size)();
  void (*init)(void*, bool);
};

constexpr Part kParts[] = {
    {"partheal heal requests", heal_requests_shmem_size, init_heal_requests},
    {"partheal create-ahead queue", ahead_queue_shmem_size, init_ahead_queue},
    {"partheal databases", databases_shmem_size, init_databases},
};

}  // namespace

void request_shared_memory() {
  pg::guard([&] {
    Size total = 0;  // add_size and mul_size raise an ERROR on overflow
    // ShmemInitStruct rounds each part up to a cache line.
    for (const Part& p : kParts) total = add_size(total, CACHELINEALIGN(p.size()));
    RequestAddinShmemSpace(total);
    RequestNamedLWLockTranche("partheal", 1);
  });
  back_offs::request_shared_memory();
}

void init_shared_memory() {
  // Each part is initialised under AddinShmemInitLock, as PostgreSQL's own
  // are; the init functions touch only the memory they are given.
  for (const Part& p : kParts) {
    pg::guard([&] {
      LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
      bool found = false;
      void* memory = ShmemInitStruct(p.name, p.size(), &found);
      p.init(memory, found);
      LWLockRelease(AddinShmemInitLock);
    });
  }
  back_offs::init_shared_memory();
}

}  // namespace partheal::worker
