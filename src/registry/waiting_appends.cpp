#include "registry/waiting_appends.hpp"

#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "registry/table_state.hpp"

extern "C" {
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

namespace partheal::registry {

namespace {

struct Slot {
  pg_atomic_uint32 relid;   // InvalidOid: nothing published
  pg_atomic_uint32 dboid;   // relids repeat across databases
  pg_atomic_uint64 lowest;  // int64 bits
};

Slot* slots = nullptr;
bool exit_callback_set = false;

Slot* my_slot() {
  const int i = pg::compat::backend_index();
  if (slots == nullptr || i < 0 || i >= MaxBackends) return nullptr;
  return &slots[i];
}

// At exit (FATAL included), a key published and never cleared would hold
// retention back from the table until this slot is used again.
void clear_at_exit(int, Datum) {
  clear_waiting();
}

}  // namespace

bool publish_waiting(Oid relid, int64 lowest) {
  Slot* slot = my_slot();
  if (slot == nullptr) return false;
  if (!exit_callback_set) {
    pg::guard([] { before_shmem_exit(clear_at_exit, Datum(0)); });
    exit_callback_set = true;
  }
  pg_atomic_write_u64(&slot->lowest, static_cast<uint64>(lowest));
  pg_atomic_write_u32(&slot->dboid, MyDatabaseId);
  pg_write_barrier();
  pg_atomic_write_u32(&slot->relid, relid);
  pg_memory_barrier();
  int64 upto = kNothingAttempted;
  const bool registered = with_state(relid, [&](TableState& s) {
    upto = static_cast<int64>(pg_atomic_read_u64(&s.retention_upto));
  });
  return registered && (upto == kNothingAttempted || lowest >= upto);
}

void clear_waiting() {
  if (Slot* slot = my_slot()) pg_atomic_write_u32(&slot->relid, InvalidOid);
}

bool announce_retention(Oid relid, int64 upto, std::optional<int64>& lowest) {
  lowest.reset();
  const bool stored = with_state(relid, [&](TableState& s) {
    pg_atomic_write_u64(&s.retention_upto, static_cast<uint64>(upto));
  });
  if (!stored || slots == nullptr) return false;
  pg_memory_barrier();
  for (int i = 0; i < MaxBackends; ++i) {
    if (pg_atomic_read_u32(&slots[i].relid) != relid) continue;
    pg_read_barrier();
    if (pg_atomic_read_u32(&slots[i].dboid) != MyDatabaseId) continue;
    const int64 key = static_cast<int64>(pg_atomic_read_u64(&slots[i].lowest));
    if (!lowest || key < *lowest) lowest = key;
  }
  return true;
}

void end_retention(Oid relid) {
  with_state(relid, [](TableState& s) {
    pg_atomic_write_u64(&s.retention_upto, static_cast<uint64>(kNothingAttempted));
  });
}

void request_waiting_appends_memory() {
  pg::guard([] { RequestAddinShmemSpace(mul_size(MaxBackends, sizeof(Slot))); });
}

void init_waiting_appends_memory() {
  pg::guard([] {
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found = false;
    slots = static_cast<Slot*>(
        ShmemInitStruct("partheal waiting appends", mul_size(MaxBackends, sizeof(Slot)), &found));
    if (!found)
      for (int i = 0; i < MaxBackends; ++i) {
        pg_atomic_init_u32(&slots[i].relid, InvalidOid);
        pg_atomic_init_u32(&slots[i].dboid, InvalidOid);
        pg_atomic_init_u64(&slots[i].lowest, 0);
      }
    LWLockRelease(AddinShmemInitLock);
  });
}

}  // namespace partheal::registry
