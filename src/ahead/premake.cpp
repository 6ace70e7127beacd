#include "ahead/premake.hpp"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "ahead/clock.hpp"
#include "ahead/headroom.hpp"
#include "partitions/catalog.hpp"
#include "partitions/ensure_covering.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "pg/sequence.hpp"
#include "pg/subxact.hpp"

extern "C" {
#include "access/relation.h"
#include "utils/timestamp.h"
}

namespace partheal::ahead {

namespace {

// The keys whose partitions must exist once the registration returns.
std::vector<int64> keys_needed(const registry::ManagedTable& table) {
  const partitions::KeySpace keys = table.key_space();
  if (keys.is_time()) {
    std::vector<int64_t> needed =
        plan_by_clock(keys, table.config.premake, table.config.mark_percent, GetCurrentTimestamp())
            .keys;
    return std::vector<int64>(needed.begin(), needed.end());
  }
  if (table.config.premake == 0 || table.config.mark_percent == 0) return {};
  std::optional<pg::SequencePosition> seq = pg::read_sequence(table.shape.sequence, true);
  if (!seq) return {};
  Draws d{seq->drawn ? seq->last : seq->next, seq->drawn, seq->increment, seq->cache};
  // The worker's floor (catch_up.cpp): premake after the position's own.
  std::vector<int64_t> needed =
      needed_ids(d, table.config.partition_size, table.config.mark_percent,
                 table.config.premake + 1, table.shape.key_max);
  return std::vector<int64>(needed.begin(), needed.end());
}

}  // namespace

void make_premade(const registry::ManagedTable& table) {
  const Oid relid = table.shape.relid;
  const partitions::KeySpec spec = table.key_spec();
  for (int64 key : keys_needed(table)) {
    Relation rel = pg::open_existing(relid, AccessShareLock);
    partitions::refresh_partitions(rel);
    const bool covered = table.shape.has_default_partition ? partitions::has_own_partition(rel, key)
                                                           : partitions::routes(rel, key);
    pg::guard([&] { relation_close(rel, NoLock); });
    if (covered) continue;
    if (!table.shape.has_default_partition) {
      (void)partitions::ensure_covering(relid, key, spec);
      continue;
    }
    // A DEFAULT partition holding rows of the window makes its ATTACH fail:
    // the registration stands, the window is said to be missing, and the
    // rows stay where they are (partheal_partition_data moves them).
    try {
      pg::in_subtransaction([&] { (void)partitions::ensure_covering(relid, key, spec); });
    } catch (const PgError& e) {
      pg::report(WARNING, e.sqlerrcode(),
                 fmt::format("the window of {} for {} was not made: {}",
                             pg::relation_label(relid), table.key_space().key_text(key), e.what()),
                 {{}, "Move the DEFAULT partition's rows into windows with "
                      "partheal_partition_data; the worker then makes the window."});
    }
  }
}

}  // namespace partheal::ahead
