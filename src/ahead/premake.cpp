#include "ahead/premake.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "ahead/clock.hpp"
#include "ahead/headroom.hpp"
#include "partitions/catalog.hpp"
#include "partitions/ensure_covering.hpp"
#include "partitions/time_zone.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/sequence.hpp"

extern "C" {
#include "access/relation.h"
#include "access/xact.h"
#include "utils/timestamp.h"
}

namespace partheal::ahead {

namespace {

// The keys whose partitions must exist once the registration returns.
std::vector<int64> keys_needed(const registry::ManagedTable& table) {
  const partitions::KeySpace keys = table.key_space();
  if (keys.is_time()) {
    // Both the transaction's now(), which a DEFAULT now() stores in the rest
    // of the registering transaction, and the clock, which the worker goes
    // by: they are in different windows when the transaction began in an
    // earlier one.
    std::vector<int64> needed;
    for (const int64 now : {GetCurrentTransactionStartTimestamp(), GetCurrentTimestamp()}) {
      for (int64_t key : plan_by_clock(keys, table.config.premake, table.config.mark_percent, now,
                                       partitions::clock_offset(keys, now))
                             .keys)
        if (std::find(needed.begin(), needed.end(), key) == needed.end()) needed.push_back(key);
    }
    return needed;
  }
  if (table.config.premake == 0 || table.config.mark_percent == 0) return {};
  std::optional<pg::SequencePosition> seq = pg::read_sequence(table.shape.sequence, true);
  if (!seq) return {};
  Draws d{seq->drawn ? seq->last : seq->next, seq->drawn, seq->increment, seq->cache};
  // The worker's floor (sequence_poll.cpp): premake after the position's own.
  std::vector<int64_t> needed =
      needed_ids(d, table.config.partition_size, table.config.mark_percent,
                 table.config.premake + 1, Min(table.shape.key_max, seq->max_value));
  return std::vector<int64>(needed.begin(), needed.end());
}

}  // namespace

void make_premade(const registry::ManagedTable& table) {
  const Oid relid = table.shape.relid;
  const partitions::KeySpec spec = table.key_spec();
  // While a DEFAULT partition is attached, partheal makes no partitions
  // (partheal_manage warns a time-keyed table's owner of it).
  if (table.shape.has_default_partition()) return;
  for (int64 key : keys_needed(table)) {
    Relation rel = pg::open_existing(relid, AccessShareLock);
    partitions::refresh_partitions(rel);
    const bool covered = table.shape.has_default_partition()
                             ? partitions::has_own_partition(rel, key)
                             : partitions::routes(rel, key);
    pg::guard([&] { relation_close(rel, NoLock); });
    if (!covered) (void)partitions::ensure_covering(relid, key, spec);
  }
}

}  // namespace partheal::ahead
