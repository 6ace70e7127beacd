// partheal_reserve: the heal loop in its cover-only mode. It creates the
// partitions a bulk load (COPY, INSERT ... SELECT) will need before it
// starts, through the same loop as every append.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "append/on_coordinator.hpp"
#include "heal/heal_loop.hpp"
#include "partitions/catalog.hpp"
#include "partitions/key_space.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/sequence.hpp"
#include "registry/registry.hpp"
#include "settings.hpp"
#include "worker/requests.hpp"

extern "C" {
#include "access/relation.h"
#include "miscadmin.h"
#include "tcop/utility.h"
}

namespace {

// Partitions a single call may create: an owner's bulk load, bounded so that
// a typo cannot flood the catalog.
constexpr int64 kOwnerReserveLimit = 10000;

[[noreturn]] void null_argument(const char* name, const char* signature) {
  partheal::pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, fmt::format("{} must not be NULL", name), {},
                     signature);
}

}  // namespace

using namespace partheal;

// partheal_reserve(parent regclass, ids bigint) RETURNS integer
PARTHEAL_SQL_FUNCTION(partheal_reserve) {
  constexpr const char* kSignature =
      "partheal_reserve(parent regclass, ids bigint) creates the partitions the next ids values "
      "of the table's sequence need.";
  settings::require_preloaded();
  if (PG_ARGISNULL(0)) null_argument("parent", kSignature);
  if (PG_ARGISNULL(1)) null_argument("ids", kSignature);
  Oid relid = PG_GETARG_OID(0);
  int64 count = PG_GETARG_INT64(1);
  if (count <= 0)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("ids must be greater than zero, not {}", count), {},
             "Give how many ids the coming load will draw, for example the row count of a COPY.");
  // Partitions are committed by the worker and outlive this transaction:
  // refuse before anything is created.
  pg::guard([] { PreventCommandIfReadOnly("partheal_reserve()"); });
  registry::Opened opened = registry::open_for_insert(relid);
  Relation parent = opened.parent;
  registry::TablePtr table = opened.table;
  const registry::TableShape& shape = table->shape;
  if (shape.key_is_time)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("\"{}\" is partitioned by time, not by id", shape.name),
             "partheal_reserve makes the partitions the next ids of a sequence need; a time-keyed "
             "table's windows follow the clock.",
             "The worker keeps the windows from now's through premake after it; partheal_append "
             "heals any other.");
  const int64 size = table->config.partition_size;
  pg::SequencePosition seq = *pg::read_sequence(shape.sequence, true);
  if (seq.increment < 0)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("the id sequence of \"{}\" descends", shape.name), {},
             "partheal_reserve covers ascending sequences only.");
  // The ids the next `count` draws return, clipped to the key type and to
  // the sequence's MAXVALUE: past either, nextval fails, and no partition
  // there could ever be used.
  const int64 reachable = Min(shape.key_max, seq.max_value);
  __int128 first = seq.next;
  __int128 last = first + static_cast<__int128>(count - 1) * seq.increment;
  if (first > reachable || (seq.drawn && seq.last >= seq.max_value)) {
    pg::guard([&] { relation_close(parent, NoLock); });
    return Int32GetDatum(0);
  }
  if (last > reachable) last = reachable;
  const partitions::KeySpace keys = table->key_space();
  int64 first_n = keys.number_of(static_cast<int64>(first));
  int64 last_n = keys.number_of(static_cast<int64>(last));
  // With an increment larger than a partition every draw lands in a
  // partition of its own, and the partitions between are never used.
  const bool sparse = seq.increment > size;
  __int128 partitions =
      sparse ? (last - first) / seq.increment + 1 : static_cast<__int128>(last_n) - first_n + 1;
  bool owner = pg::guard([&] { return pg::compat::owns_relation(relid, GetUserId()); });
  int64 limit = owner ? kOwnerReserveLimit : settings::max_ahead_partitions;
  if (partitions > limit)
    pg::fail(owner ? ERRCODE_PROGRAM_LIMIT_EXCEEDED : ERRCODE_INSUFFICIENT_PRIVILEGE,
             fmt::format("reserving {} ids of \"{}\" needs {} partitions, more than the {} one "
                         "call may create{}",
                         count, shape.name, static_cast<int64>(partitions), limit,
                         owner ? "" : " for a non-owner"),
             owner ? std::string()
                   : std::string("A role that does not own the table may reserve at most "
                                 "partheal.max_ahead_partitions partitions past the sequence "
                                 "position."),
             owner ? "Reserve in several calls, or use a larger partition_size."
                   : "Reserve fewer ids, or ask the table's owner to reserve them.");
  // One id per partition the load will touch: the first it will draw there.
  std::vector<int64> ids;
  ids.reserve(static_cast<size_t>(partitions));
  for (__int128 id = first; sparse && id <= last; id += seq.increment)
    ids.push_back(static_cast<int64>(id));
  for (int64 n = first_n; !sparse && n <= last_n; ++n) {
    int64 start = 0;
    if (!keys.first_key_of(n, &start)) break;
    ids.push_back(n == first_n ? static_cast<int64>(first) : start);
  }
  size_t before = partitions::attached_ranges(parent).size();
  heal::cover(*table, parent, ids, append::partition_maker(*table, {}),  // all drawn
              heal::HealPath::kReserve);
  partitions::refresh_partitions(parent);
  size_t after = partitions::attached_ranges(parent).size();
  pg::guard([&] { relation_close(parent, NoLock); });
  return Int32GetDatum(static_cast<int32>(after > before ? after - before : 0));
}
