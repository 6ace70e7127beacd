// Inside the databases module (databases.cpp, launcher_round.cpp): the
// entries in shared memory and the helpers both files use. No other file
// includes this one.
#pragma once

#include <cstring>
#include <type_traits>

#include "pg/boundary.hpp"
#include "worker/databases.hpp"

extern "C" {
#include "postmaster/bgworker.h"
#include "storage/lwlock.h"
}

namespace partheal::worker::entries {

// Databases the launcher can follow at once; one without partheal takes an
// entry only until a database that needs one comes along.
constexpr int kDatabaseEntries = 1024;

struct Databases {
  LWLock* lock;      // guards the entries and `launcher`
  PGPROC* launcher;  // the running launcher: its latch; nullptr while there is none
  DatabaseEntry entries[kDatabaseEntries];
};

Databases& databases();

// The shared copy as PostgreSQL's functions take it, on the caller's stack:
// no allocation, so nothing can fail while the entries' lock is held.
struct LocalHandle {
  alignas(8) unsigned char bytes[sizeof(WorkerHandle)];
  explicit LocalHandle(const WorkerHandle& h) { std::memcpy(bytes, &h, sizeof(h)); }
  BackgroundWorkerHandle* get() { return reinterpret_cast<BackgroundWorkerHandle*>(bytes); }
};

bool paused(const DatabaseEntry& e);
// Call with the lock held.
DatabaseEntry* find(Oid dboid);
// Call with the lock held exclusively. A backend's database may take the
// entry of a database with neither worker, wish nor pause when the table is
// full; the launcher's discoveries take free entries only.
DatabaseEntry* find_or_add(Oid dboid, bool may_evict);

void terminate(const WorkerHandle& handle);

// Frees what belongs to a database that is gone, or has no partheal any
// more: its tables' states and its queued create-ahead attempts.
void forget_database_state(Oid dboid);

// Runs f with the entries' lock held (exclusively or shared); f touches
// shared memory and PostgreSQL's bgworker calls only.
template <typename F>
auto locked(LWLockMode mode, F&& f) -> decltype(f()) {
  return pg::guard([&] {
    LWLockAcquire(databases().lock, mode);
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      LWLockRelease(databases().lock);
    } else {
      auto r = f();
      LWLockRelease(databases().lock);
      return r;
    }
  });
}

}  // namespace partheal::worker::entries
