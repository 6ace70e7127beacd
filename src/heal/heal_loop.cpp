#include <fmt/format.h>

#include <set>
#include <string>

#include "errors.hpp"
#include "registry/table_state.hpp"
#include "partitions/catalog.hpp"
#include "heal/heal_loop.hpp"
#include "heal/self_deadlock.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/report.hpp"
#include "pg/subxact.hpp"
#include "settings.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "storage/lmgr.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

namespace partheal::heal {

namespace {

std::string id_list(const partitions::KeySpace& keys, const std::vector<int64>& ids) {
  constexpr size_t kShown = 10;
  std::string out;
  for (size_t i = 0; i < ids.size() && i < kShown; ++i)
    out += (i ? ", " : "") + keys.key_text(ids[i]);
  if (ids.size() > kShown) out += fmt::format(" and {} more", ids.size() - kShown);
  return out;
}

std::string qualified(const registry::TableShape& shape) {
  return fmt::format("{}.{}", shape.schema, shape.name);
}

// A time key at infinity (or past the type's finite range) has no window.
[[noreturn]] void no_window(const registry::ManagedTable& table, const partitions::KeySpace& keys,
                            int64 key) {
  pg::fail(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE,
           fmt::format("no partition of \"{}\" can be made for {} \"{}\"", qualified(table.shape),
                       key > keys.spec().max ? "infinity" : "-infinity", table.shape.key_column),
           "partheal makes windows for finite times only; nothing was created or inserted.",
           "Give the row a finite time, or attach a partition FROM (...) TO (MAXVALUE) (or "
           "FROM (MINVALUE)) for it by hand.");
}

// One round: ask the worker for a partition for each missing partition
// number, then make the new partitions visible to this backend.
void heal(const registry::ManagedTable& table, Relation parent, const std::vector<int64>& missing,
          const MakePartition& make, HealPath path) {
  refuse_self_deadlock(table, parent);
  uint64 now = static_cast<uint64>(GetCurrentTimestamp());
  const bool by_insert = path == HealPath::kInsert;
  registry::with_state(table.shape.relid, [now, by_insert](registry::TableState& s) {
    registry::count(by_insert ? s.insert_heals : s.heals);
    pg_atomic_write_u64(&s.last_heal, now);
  });
  const char* healer = by_insert                    ? "a plain INSERT"
                       : path == HealPath::kReserve ? "partheal_reserve"
                                                    : "partheal_append";
  // One request per missing partition number, for the first key that needs it.
  const partitions::KeySpace keys = table.key_space();
  const char* what = keys.is_time() ? "key" : "id";
  // Every key is checked before the first partition is made.
  for (int64 id : missing)
    if (!keys.finite(id)) no_window(table, keys, id);
  // One request per gap: a window split by partitions made by hand has a
  // gap on each side of them, and each needs a partition of its own. A key
  // the partitions made this round cover asks for nothing, and nor does one
  // whose window another session had made (the next round routes it).
  std::vector<partitions::Range> made_now;
  std::set<int64> made_elsewhere;
  auto covered = [&made_now](int64 key) {
    for (const partitions::Range& r : made_now)
      if (partitions::contains(r, key)) return true;
    return false;
  };
  for (int64 id : missing) {
    if (covered(id) || made_elsewhere.count(keys.number_of(id)) > 0) continue;
    partitions::Ensured made = make(table.shape.relid, id, keys.spec());
    if (made.partition.empty())
      made_elsewhere.insert(keys.number_of(id));
    else
      made_now.push_back(made.made);
    pg::report(LOG, 0,
               fmt::format("{} heal: no partition of \"{}\" for {} {} ({}s {}); {}; healed for {}",
                           errors::kLogHeal, qualified(table.shape), what, keys.key_text(id), what,
                           id_list(keys, missing),
                           made.partition.empty()
                               ? std::string("another session had created it")
                               : fmt::format("created \"{}\" {}", made.partition, made.range),
                           healer),
               {{}, {}, true});
  }
  // The worker committed: route again from the catalog as it is now.
  partitions::refresh_partitions(parent);
}

[[noreturn]] void behind(const registry::ManagedTable& table, const std::vector<int64>& ids,
                         int heals) {
  registry::with_state(table.shape.relid,
                       [](registry::TableState& s) { registry::count(s.exhaustions); });
  const partitions::KeySpace keys = table.key_space();
  const char* what = keys.is_time() ? "Key" : "Id";
  pg::fail(errors::kPartitionCreationBehind,
           fmt::format("partition creation is behind for \"{}\"", qualified(table.shape)),
           fmt::format("{}{} {} still {} no partition after {} heal{}.", what,
                       ids.size() == 1 ? "" : "s", id_list(keys, ids),
                       ids.size() == 1 ? "has" : "have", heals, heals == 1 ? "" : "s"),
           "This error is permanent: rerunning the same append would fail the same way. Check "
           "the server log for PHL03 lines, and raise partheal.max_retries if partitions are "
           "being detached while rows arrive.");
}

}  // namespace

Miss routing_miss(const PgError& e, Oid parent) {
  const ErrorFields& f = e.fields();
  // A CHECK constraint names itself; routing and partition-bound failures do
  // not. Routing names the partitioned table it failed at, a bound failure
  // names a leaf partition.
  if (!f.constraint_name.empty()) return Miss::kNone;
  // A routing miss at a shard and a CHECK violation there look the same
  // (citus/relayed_errors.hpp): told apart by the catalog.
  if (f.table_name.empty() && f.schema_name.empty() &&
      citus::relayed_from_shard(f.funcname, f.sqlerrcode, parent))
    return Miss::kRelayed;
  if (f.sqlerrcode != ERRCODE_CHECK_VIOLATION || f.table_name.empty() || f.schema_name.empty())
    return Miss::kNone;
  const char* schema = f.schema_name.c_str();
  const char* table = f.table_name.c_str();
  Oid rel = pg::guard([&] {
    Oid ns = get_namespace_oid(schema, true);
    return ns == InvalidOid ? InvalidOid : get_relname_relid(table, ns);
  });
  return rel == parent ? Miss::kAtParent : Miss::kNone;
}

namespace {

Oid appending_to = InvalidOid;

// Marks the append's own INSERT for as long as it runs (a trigger of it may
// append to another table: the mark is restored after).
class AppendInsert {
 public:
  explicit AppendInsert(Oid relid) : outer_(appending_to) { appending_to = relid; }
  ~AppendInsert() { appending_to = outer_; }
  AppendInsert(const AppendInsert&) = delete;
  AppendInsert& operator=(const AppendInsert&) = delete;

 private:
  Oid outer_;
};

void run_insert(Oid relid, const std::function<void()>& insert) {
  AppendInsert running(relid);
  insert();
}

// Returns the heals it made.
int loop(const registry::ManagedTable& table, Relation parent, const std::vector<int64>& ids,
         const MakePartition& make, const std::function<void()>& insert, HealPath path,
         bool refreshed) {
  const int max_heals = 1 + settings::max_retries;
  int heals = 0;
  int misses = 0;          // routing misses after a heal, bounded like the heals
  bool fresh = refreshed;  // the partition view was read from the catalog since the last miss
  for (;;) {
    std::vector<int64> missing = partitions::unrouted(parent, ids);
    if (!missing.empty() && !fresh) {
      // A view that is only stale needs no worker: read it again first.
      partitions::refresh_partitions(parent);
      fresh = true;
      continue;
    }
    if (!missing.empty()) {
      if (heals == max_heals) behind(table, missing, heals);
      ++heals;
      heal(table, parent, missing, make, path);
      continue;
    }
    if (!insert) return heals;  // cover(): nothing to insert
    if (heals == 0) {
      // The fast path: every partition exists, so no subtransaction and no
      // extra XID. A partition detached since the check fails the statement
      // as a plain INSERT would.
      run_insert(table.shape.relid, insert);
      return heals;
    }
    // After a heal, rerun inside a subtransaction, so that a partition lost
    // again in between (DETACH ... CONCURRENTLY) is a routing miss to heal,
    // not the end of the caller's transaction. It costs one XID per heal.
    try {
      pg::in_subtransaction([&] { run_insert(table.shape.relid, insert); });
      return heals;
    } catch (const PgError& e) {
      Miss miss = routing_miss(e, table.shape.relid);
      if (miss == Miss::kNone) throw;
      if (miss == Miss::kRelayed) {
        // Relayed from a shard: a miss only if the catalog, read again,
        // lacks a partition for one of the rows; otherwise the shard's own
        // error (a CHECK constraint there) goes to the caller unchanged.
        partitions::refresh_partitions(parent);
        if (partitions::unrouted(parent, ids).empty()) throw;
        pg::report(LOG, 0,
                   fmt::format("{} heal: a routing miss relayed from a shard of \"{}\": {}",
                               errors::kLogHeal, qualified(table.shape), e.what()),
                   {{}, {}, true});
      }
      if (++misses >= max_heals) behind(table, ids, heals);
      fresh = miss == Miss::kRelayed;
    }
  }
}

}  // namespace

Oid append_insert_running() {
  return appending_to;
}

void insert_until_covered(const registry::ManagedTable& table, Relation parent,
                          const std::vector<int64>& ids, const MakePartition& make,
                          const std::function<void()>& insert) {
  loop(table, parent, ids, make, insert, HealPath::kAppend, false);
}

int cover(const registry::ManagedTable& table, Relation parent, const std::vector<int64>& ids,
          const MakePartition& make, HealPath path, bool refreshed) {
  return loop(table, parent, ids, make, nullptr, path, refreshed);
}

}  // namespace partheal::heal
