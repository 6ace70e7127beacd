#include <algorithm>
#include "registry/table_state.hpp"

extern "C" {
#include "access/xact.h"
#include "storage/procarray.h"
}
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "settings.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
}

namespace partheal::registry {

namespace {

HTAB* tables = nullptr;
LWLock* tables_lock = nullptr;

uint64 bits_of(int64 v) {
  return static_cast<uint64>(v);
}
int64 value_of(uint64 bits) {
  return static_cast<int64>(bits);
}

void init_entry(TableState* s) {
  pg_atomic_init_u64(&s->watermark, bits_of(kNothingAttempted));
  pg_atomic_init_u64(&s->partition_size, 0);
  pg_atomic_init_u32(&s->mark_percent, 0);
  pg_atomic_init_u64(&s->key_max, bits_of(PG_INT64_MAX));
  pg_atomic_init_u32(&s->headroom, 0);
  for (pg_atomic_uint64* c : {&s->appends,
                              &s->rows,
                              &s->heals,
                              &s->insert_heals,
                              &s->exhaustions,
                              &s->ahead_requested,
                              &s->ahead_created,
                              &s->ahead_failed,
                              &s->last_heal,
                              &s->queue_full_said_at,
                              &s->queue_full_dropped,
                              &s->next_from,
                              &s->next_to,
                              &s->next_at,
                              &s->newest_upper,
                              &s->drained_rows,
                              &s->drained_windows,
                              &s->dropped_windows,
                              &s->detached_windows,
                              &s->expired_in_default})
    pg_atomic_init_u64(c, 0);
  pg_atomic_init_u32(&s->next_reason, static_cast<uint32>(NextReason::kNotPolled));
  pg_atomic_init_u32(&s->newest_upper_kind, 0);
  pg_atomic_init_u32(&s->key_format, 0);
  pg_atomic_init_u32(&s->registering_xid, InvalidTransactionId);
  pg_atomic_init_u64(&s->worker_clock_offset, bits_of(kNothingAttempted));
}

// Visits every state under the table lock. `visit` touches shared memory
// only, never throws; removing the entry just returned is allowed during a
// dynahash scan, so it may remove it (under LW_EXCLUSIVE).
template <typename Visit>
void scan(LWLockMode mode, Visit&& visit) {
  pg::guard([&] {
    LWLockAcquire(tables_lock, mode);
    HASH_SEQ_STATUS status;
    hash_seq_init(&status, tables);
    for (auto* s = static_cast<TableState*>(hash_seq_search(&status)); s != nullptr;
         s = static_cast<TableState*>(hash_seq_search(&status)))
      visit(s);
    LWLockRelease(tables_lock);
  });
}

void remove(TableState* s) {
  (void)hash_search(tables, &s->key, HASH_REMOVE, nullptr);
}

}  // namespace

bool with_state(Oid relid, void (*f)(TableState&, void*) noexcept, void* ctx) {
  TableKey key{MyDatabaseId, relid};
  return pg::guard([&] {
    LWLockAcquire(tables_lock, LW_SHARED);
    auto* s = static_cast<TableState*>(hash_search(tables, &key, HASH_FIND, nullptr));
    if (s != nullptr) f(*s, ctx);
    LWLockRelease(tables_lock);
    return s != nullptr;
  });
}

bool track(Oid relid, int64 partition_size, int mark_percent, int64 key_max) {
  TableKey key{MyDatabaseId, relid};
  return pg::guard([&] {
    LWLockAcquire(tables_lock, LW_EXCLUSIVE);
    bool found = false;
    // dynahash allocates entries in chunks, so HASH_FIXED_SIZE alone is no
    // exact limit: the count is checked here. HASH_ENTER_NULL answers NULL
    // rather than raising if shared memory runs out all the same.
    auto* s = static_cast<TableState*>(hash_search(tables, &key, HASH_FIND, nullptr));
    if (s == nullptr && hash_get_num_entries(tables) < settings::max_tables) {
      s = static_cast<TableState*>(hash_search(tables, &key, HASH_ENTER_NULL, &found));
      if (s != nullptr) init_entry(s);
    }
    if (s != nullptr) {
      // A new size renumbers the partitions: the watermark, a partition
      // number under the old size, would mean another id altogether.
      uint64 old_size = pg_atomic_read_u64(&s->partition_size);
      if (old_size != 0 && old_size != static_cast<uint64>(partition_size))
        pg_atomic_write_u64(&s->watermark, bits_of(kNothingAttempted));
      pg_atomic_write_u64(&s->partition_size, static_cast<uint64>(partition_size));
      pg_atomic_write_u32(&s->mark_percent, static_cast<uint32>(mark_percent));
      pg_atomic_write_u64(&s->key_max, bits_of(key_max));
    }
    LWLockRelease(tables_lock);
    return s != nullptr;
  });
}

void forget_all_but(const std::vector<Oid>& registered) {
  scan(LW_EXCLUSIVE, [&](TableState* s) {
    if (s->key.dboid != MyDatabaseId) return;
    bool keep = false;
    for (Oid relid : registered) keep = keep || relid == s->key.relid;
    // A registration still in flight is not in `registered` yet.
    TransactionId xid = pg_atomic_read_u32(&s->registering_xid);
    if (!keep && TransactionIdIsValid(xid) && TransactionIdIsInProgress(xid)) keep = true;
    if (!keep) remove(s);
  });
}

void mark_registering(Oid relid) {
  TransactionId xid = pg::guard([] { return GetTopTransactionId(); });
  with_state(relid, [xid](TableState& s) { pg_atomic_write_u32(&s.registering_xid, xid); });
}

int forget_database(Oid dboid, bool count_only) {
  int n = 0;
  scan(count_only ? LW_SHARED : LW_EXCLUSIVE, [&](TableState* s) {
    if (s->key.dboid != dboid) return;
    ++n;
    if (!count_only) remove(s);
  });
  return n;
}

std::vector<Oid> databases_with_state() {
  std::vector<Oid> out;
  out.reserve(static_cast<size_t>(settings::max_tables) + 1);
  // Reserved in advance: the visit never allocates.
  scan(LW_SHARED, [&](TableState* s) {
    if (out.size() < out.capacity() && std::find(out.begin(), out.end(), s->key.dboid) == out.end())
      out.push_back(s->key.dboid);
  });
  return out;
}

void forget(Oid relid) {
  TableKey key{MyDatabaseId, relid};
  pg::guard([&] {
    LWLockAcquire(tables_lock, LW_EXCLUSIVE);
    (void)hash_search(tables, &key, HASH_REMOVE, nullptr);
    LWLockRelease(tables_lock);
  });
}

int64 watermark(TableState* state) {
  return value_of(pg_atomic_read_u64(&state->watermark));
}

bool claim(TableState* state, int64 partition) {
  uint64 seen = pg_atomic_read_u64(&state->watermark);
  while (value_of(seen) < partition)
    if (pg_atomic_compare_exchange_u64(&state->watermark, &seen, bits_of(partition))) return true;
  return false;
}

void pull_watermark_down(TableState* state, int64 ceiling) {
  uint64 seen = pg_atomic_read_u64(&state->watermark);
  while (value_of(seen) > ceiling)
    if (pg_atomic_compare_exchange_u64(&state->watermark, &seen, bits_of(ceiling))) return;
}

long tracked() {
  return pg::guard([] {
    LWLockAcquire(tables_lock, LW_SHARED);
    long n = hash_get_num_entries(tables);
    LWLockRelease(tables_lock);
    return n;
  });
}

void for_each_in_database(void (*f)(TableState*, void*) noexcept, void* ctx) {
  scan(LW_SHARED, [&](TableState* s) {
    if (s->key.dboid == MyDatabaseId) f(s, ctx);
  });
}

void request_shared_memory() {
  pg::guard([] {
    RequestAddinShmemSpace(hash_estimate_size(settings::max_tables, sizeof(TableState)));
    RequestNamedLWLockTranche("partheal tables", 1);
  });
}

void init_shared_memory() {
  HASHCTL info;
  info.keysize = sizeof(TableKey);
  info.entrysize = sizeof(TableState);
  pg::guard([&] {
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    tables = pg::compat::shmem_init_fixed_hash("partheal tables", settings::max_tables, &info,
                                               HASH_ELEM | HASH_BLOBS);
    LWLockRelease(AddinShmemInitLock);
    tables_lock = &(GetNamedLWLockTranche("partheal tables"))->lock;
  });
}

void set_next(Oid relid, NextReason reason, int64 from, int64 to, int64 at) {
  with_state(relid, [&](TableState& s) {
    pg_atomic_write_u64(&s.next_from, bits_of(from));
    pg_atomic_write_u64(&s.next_to, bits_of(to));
    pg_atomic_write_u64(&s.next_at, bits_of(at));
    pg_atomic_write_u32(&s.next_reason, static_cast<uint32>(reason));
  });
}

void set_newest_upper(Oid relid, const std::optional<partitions::Bound>& upper, KeyFormat format) {
  uint32 kind = !upper ? 0 : upper->kind == partitions::Bound::Kind::kValue ? 1 : 2;
  int64 value = upper ? upper->value : 0;
  with_state(relid, [&](TableState& s) {
    pg_atomic_write_u64(&s.newest_upper, bits_of(value));
    pg_atomic_write_u32(&s.newest_upper_kind, kind);
    pg_atomic_write_u32(&s.key_format, static_cast<uint32>(format));
  });
}

void set_worker_clock_offset(Oid relid, int64 offset) {
  with_state(relid,
             [&](TableState& s) { pg_atomic_write_u64(&s.worker_clock_offset, bits_of(offset)); });
}

std::optional<int64> worker_clock_offset(Oid relid) {
  int64 offset = kNothingAttempted;
  with_state(relid,
             [&](TableState& s) { offset = value_of(pg_atomic_read_u64(&s.worker_clock_offset)); });
  if (offset == kNothingAttempted) return std::nullopt;
  return offset;
}

}  // namespace partheal::registry
