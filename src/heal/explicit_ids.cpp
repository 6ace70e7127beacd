#include <fmt/format.h>

#include <optional>

#include "pg/sequence.hpp"
#include "partitions/catalog.hpp"
#include "heal/explicit_ids.hpp"
#include "partitions/key_space.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/security.hpp"
#include "settings.hpp"

extern "C" {
#include "utils/acl.h"
#include "utils/rel.h"
}

namespace partheal::heal {

void refuse_explicit_ids_out_of_window(const registry::ManagedTable& table, Relation parent,
                                       const std::vector<int64>& explicit_ids) {
  if (explicit_ids.empty()) return;
  const registry::TableShape& shape = table.shape;
  if (partitions::unrouted(parent, explicit_ids).empty()) return;
  if (pg::guard([&] { return pg::compat::owns_relation(shape.relid, GetUserId()); })) return;
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
  for (int64 id : missing) {
    __int128 n = partitions::partition_number(id, size);
    if (n >= at - reach && n <= at + reach) continue;
    pg::fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
             fmt::format("id {} of \"{}\" needs a partition that only the table's owner may have "
                         "created",
                         id, shape.name),
             fmt::format("For a role that does not own the table, partheal creates partitions "
                         "for given ids only within partheal.max_ahead_partitions ({}) "
                         "partitions of the sequence position's.",
                         reach),
             "Leave the id out to draw it from the sequence, or ask the table's owner to append "
             "it or create its partition.");
  }
}

}  // namespace partheal::heal
