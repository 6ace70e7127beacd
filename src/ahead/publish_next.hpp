// partheal_stats.next_*: which partition the worker creates next for an
// id-keyed table, and at which id, as its poll saw the sequence.
#pragma once

#include <optional>
#include <vector>

#include "ahead/headroom.hpp"
#include "pg/postgres.hpp"
#include "registry/registry.hpp"

namespace partheal::ahead {

// ids: what the position needs (needed_ids); missing: the first of them
// without a partition, if any.
void publish_next(Oid relid, const Draws& d, const registry::ManagedTable& table,
                  const std::vector<int64>& ids, std::optional<int64> missing);

}  // namespace partheal::ahead
