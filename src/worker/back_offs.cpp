#include "worker/back_offs.hpp"

#include <algorithm>
#include <cstring>

#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "settings.hpp"

extern "C" {
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"
}

namespace partheal::worker::back_offs {

namespace {

// All fields four or eight bytes wide and set: the key is hashed as bytes.
struct Key {
  Oid dboid;
  Oid relid;
  int64 window;
  int32 job;
  int32 whole_table;  // 1: the table, window unused
};

struct Entry {
  Key key;  // the hash key; must stay first
  TimestampTz retry_at;
  int64 retry_ms;
};

HTAB* entries = nullptr;
LWLock* lock = nullptr;

// Room for a few windows of each job per table: a table rarely has more
// than one window backing off per job. When it is full, a failure is not
// held back (the next round tries it again), which costs time, not rows.
long capacity() {
  return static_cast<long>(settings::max_tables) * 8;
}

Key key_of(Oid dboid, int job, Oid relid, const Window& window) {
  Key k;
  std::memset(&k, 0, sizeof(k));
  k.dboid = dboid;
  k.relid = relid;
  k.job = job;
  k.whole_table = window ? 0 : 1;
  k.window = window ? *window : 0;
  return k;
}

// Whether the sorted [first, last) holds relid (no std:: in a guard body).
bool holds(const Oid* first, const Oid* last, Oid relid) {
  const Oid* at = std::lower_bound(first, last, relid);
  return at != last && *at == relid;
}

}  // namespace

bool waiting(Oid dboid, int job, Oid relid, const Window& window, TimestampTz now) {
  const Key k = key_of(dboid, job, relid, window);
  return pg::guard([&] {
    LWLockAcquire(lock, LW_SHARED);
    auto* e = static_cast<Entry*>(hash_search(entries, &k, HASH_FIND, nullptr));
    bool out = e != nullptr && e->retry_at > now;
    LWLockRelease(lock);
    return out;
  });
}

void back_off(Oid dboid, int job, Oid relid, const Window& window, long fixed_ms) {
  const Key k = key_of(dboid, job, relid, window);
  pg::guard([&] {
    LWLockAcquire(lock, LW_EXCLUSIVE);
    bool found = false;
    auto* e = static_cast<Entry*>(hash_search(entries, &k, HASH_ENTER_NULL, &found));
    if (e != nullptr) {
      if (!found) e->retry_ms = 0;
      e->retry_ms = fixed_ms > 0       ? fixed_ms
                    : e->retry_ms == 0 ? kFirstMs
                                       : Min(e->retry_ms * 2, kCapMs);
      e->retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), e->retry_ms);
    }
    LWLockRelease(lock);
  });
}

void clear(Oid dboid, int job, Oid relid, const Window& window) {
  const Key k = key_of(dboid, job, relid, window);
  pg::guard([&] {
    LWLockAcquire(lock, LW_EXCLUSIVE);
    (void)hash_search(entries, &k, HASH_REMOVE, nullptr);
    LWLockRelease(lock);
  });
}

void keep_windows(Oid dboid, int job, Oid relid, const std::vector<int64>& keep) {
  const int64* kept = keep.data();
  const size_t n = keep.size();
  pg::guard([&] {
    LWLockAcquire(lock, LW_EXCLUSIVE);
    // A scan visits every bucket: none at all when nothing backs off, the
    // common case, asked at every step of retention.
    if (hash_get_num_entries(entries) == 0) {
      LWLockRelease(lock);
      return;
    }
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, entries);
    while (auto* e = static_cast<Entry*>(hash_seq_search(&scan))) {
      if (e->key.dboid != dboid || e->key.job != job || e->key.relid != relid ||
          e->key.whole_table != 0)
        continue;
      bool present = false;
      for (size_t i = 0; i < n && !present; ++i) present = kept[i] == e->key.window;
      // Removing the entry just returned is allowed during a scan.
      if (!present) (void)hash_search(entries, &e->key, HASH_REMOVE, nullptr);
    }
    LWLockRelease(lock);
  });
}

void forget_all_but(Oid dboid, const std::vector<Oid>* registered) {
  // Sorted, so that each entry is looked up in log time.
  std::vector<Oid> sorted;
  if (registered != nullptr) sorted = *registered;
  std::sort(sorted.begin(), sorted.end());
  const Oid* first = sorted.data();
  const Oid* last = first + sorted.size();
  const bool all = registered == nullptr;
  pg::guard([&] {
    LWLockAcquire(lock, LW_EXCLUSIVE);
    if (hash_get_num_entries(entries) == 0) {  // every round: mostly nothing backs off
      LWLockRelease(lock);
      return;
    }
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, entries);
    while (auto* e = static_cast<Entry*>(hash_seq_search(&scan))) {
      if (e->key.dboid != dboid) continue;
      if (all || !holds(first, last, e->key.relid))
        (void)hash_search(entries, &e->key, HASH_REMOVE, nullptr);
    }
    LWLockRelease(lock);
  });
}

int waiting_count(Oid dboid) {
  return pg::guard([&] {
    const TimestampTz now = GetCurrentTimestamp();
    int n = 0;
    LWLockAcquire(lock, LW_SHARED);
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, entries);
    while (auto* e = static_cast<Entry*>(hash_seq_search(&scan)))
      if (e->key.dboid == dboid && e->retry_at > now) ++n;
    LWLockRelease(lock);
    return n;
  });
}

void request_shared_memory() {
  pg::guard([] {
    RequestAddinShmemSpace(hash_estimate_size(capacity(), sizeof(Entry)));
    RequestNamedLWLockTranche("partheal back-offs", 1);
  });
}

void init_shared_memory() {
  HASHCTL info;
  std::memset(&info, 0, sizeof(info));
  info.keysize = sizeof(Key);
  info.entrysize = sizeof(Entry);
  const long n = capacity();
  pg::guard([&] {
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    entries =
        pg::compat::shmem_init_fixed_hash("partheal back-offs", n, &info, HASH_ELEM | HASH_BLOBS);
    LWLockRelease(AddinShmemInitLock);
    lock = &(GetNamedLWLockTranche("partheal back-offs"))->lock;
  });
}

}  // namespace partheal::worker::back_offs
