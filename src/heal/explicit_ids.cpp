#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "pg/sequence.hpp"
#include "partitions/catalog.hpp"
#include "heal/explicit_ids.hpp"
#include "retention/horizon.hpp"

#include "errors.hpp"
#include "partitions/key_space.hpp"
#include "partitions/time_zone.hpp"
#include "registry/table_state.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/compat.hpp"
#include "pg/security.hpp"
#include "settings.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/acl.h"
#include "utils/rel.h"
}

namespace partheal::heal {

namespace {

// The caller counts as the owner when the current user owns the table and,
// for the insert gate (Judged::kAlsoOuterUser), the role outside any
// SECURITY DEFINER function owns it too: a definer function or trigger of
// the owner's, fed keys by a role that does not own the table, is judged as
// that role.
bool caller_owns(Oid relid, Judged judged) {
  return pg::guard([&] {
    return pg::compat::owns_relation(relid, GetUserId()) &&
           (judged == Judged::kCurrentUser || pg::compat::owns_relation(relid, GetOuterUserId()));
  });
}

}  // namespace

void refuse_explicit_ids_out_of_window(const registry::ManagedTable& table, Relation parent,
                                       const std::vector<int64>& explicit_ids, bool drawn_on_a_node,
                                       Judged judged) {
  if (explicit_ids.empty() || table.registered_on_coordinator) return;
  const registry::TableShape& shape = table.shape;
  if (partitions::unrouted(parent, explicit_ids).empty()) return;
  if (caller_owns(shape.relid, judged)) return;
  // A partition the owner attached since this backend last looked is no
  // reason to refuse.
  partitions::refresh_partitions(parent);
  std::vector<int64> missing = partitions::unrouted(parent, explicit_ids);

  // The position is read as the owner: the window is partheal's rule, not
  // something the caller needs rights on the sequence to be held to.
  std::optional<pg::SequencePosition> position;
  pg::as_role(parent->rd_rel->relowner,
              [&] { position = pg::read_sequence(shape.sequence, true); });
  const int64 size = table.config.partition_size;
  const int64 reach = settings::max_ahead_partitions;
  const __int128 at = partitions::partition_number(position->last, size);
  // On the Citus coordinator, each worker node draws from a range of its
  // own: an id near any node's position is one that node's traffic needs.
  // Read (a round trip to each node) only for an id outside the local window.
  citus::NodeReach nodes(shape.citus, shape.sequence, parent->rd_rel->relowner);
  for (int64 id : missing) {
    __int128 n = partitions::partition_number(id, size);
    if (n >= at - reach && n <= at + reach) continue;
    if (nodes.needs(id, size, reach, drawn_on_a_node)) continue;
    pg::fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
             fmt::format("id {} of \"{}\" needs a partition that only the table's owner may have "
                         "created",
                         id, shape.name),
             fmt::format("For a role that does not own the table, partheal creates partitions "
                         "for given ids only within partheal.max_ahead_partitions ({}) "
                         "partitions of the sequence position's{}.",
                         reach, shape.citus.in_metadata() ? " (on Citus, of any node's)" : ""),
             "Leave the id out to draw it from the sequence, or ask the table's owner to append "
             "it or create its partition.");
  }
}

void refuse_far_windows(const registry::ManagedTable& table, Relation parent,
                        const std::vector<int64>& keys, Judged judged) {
  const registry::TableShape& shape = table.shape;
  if (table.registered_on_coordinator) return;
  if (partitions::unrouted(parent, keys).empty()) return;
  if (caller_owns(shape.relid, judged)) return;
  partitions::refresh_partitions(parent);
  const partitions::KeySpace space = table.key_space();
  const int64 reach = table.config.premake;
  // now() on the owner's clock: for a timestamp or date key, the wall clock
  // of the worker's TimeZone, as its last poll read it (UTC before the
  // first), never the session's, which the caller sets at will (issue 35,
  // point 10: 'XXX-167' placed windows a week ahead).
  const int64 now = GetCurrentTransactionStartTimestamp();
  const int64 offset =
      space.spec().zoned ? 0 : registry::worker_clock_offset(shape.relid).value_or(0);
  const __int128 at = space.number_of(space.key_at(now + offset));
  for (int64 key : partitions::unrouted(parent, keys)) {
    if (!space.finite(key)) continue;  // the heal refuses it, 22008
    __int128 n = space.number_of(key);
    if (n >= at - reach && n <= at + reach) continue;
    pg::fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
             fmt::format("\"{}\" {} of \"{}\" needs a window that only the table's owner may "
                         "have created",
                         shape.key_column, space.key_text(key), shape.name),
             fmt::format("For a role that does not own the table, partheal creates windows only "
                         "from premake ({}) windows before now's to premake windows after it.",
                         reach),
             "Ask the table's owner to append the row or create its window.");
  }
}

void refuse_keys_past_retention(const registry::ManagedTable& table, Relation parent,
                                const std::vector<int64>& keys) {
  const registry::Config& c = table.config;
  // On a worker node, time keys are judged by the coordinator; ids of this
  // node's own range here, before they are drawn, as on the coordinator
  // (which cannot tell given ids from drawn ones).
  if (!c.retains() || keys.empty() || (table.registered_on_coordinator && c.by_time)) return;
  std::vector<int64> missing = partitions::unrouted(parent, keys);
  if (missing.empty()) return;
  const partitions::KeySpace space = table.key_space();
  // As the worker's retention will judge the partition, the position read
  // as the owner, as for the window of given ids.
  // The worker nodes are asked only for a key in one of their ranges.
  const bool other_ranges = !c.by_time && std::any_of(missing.begin(), missing.end(), [&](int64 k) {
    return citus::may_be_in_node_range(k, c.partition_size);
  });
  const retention::RetentionHorizon horizon =
      retention::retention_horizon(table, parent->rd_rel->relowner, true, other_ranges);
  if (!horizon.any()) return;
  std::vector<partitions::Range> existing = partitions::attached_ranges(parent);
  for (int64 key : missing) {
    if (!space.finite(key)) continue;  // the heal refuses it, 22008
    partitions::Range r = space.covering(key, existing);
    std::optional<int64> h = horizon.of(r);
    if (!h || r.upper.kind != partitions::Bound::Kind::kValue || r.upper.value > *h) continue;
    pg::fail(errors::kOlderThanRetention,
             fmt::format("\"{}\" {} of \"{}\" is older than the table's retention",
                         c.by_time ? table.shape.key_column : table.shape.id_column,
                         space.key_text(key), table.shape.name),
             fmt::format("Its window would end at or before the retention horizon, {}, and be "
                         "dropped at once, so partheal does not make it.",
                         space.key_text(*h)),
             "Leave the row out, or attach a DEFAULT partition to keep such rows, or register "
             "the table with a longer retention.");
  }
}

}  // namespace partheal::heal
