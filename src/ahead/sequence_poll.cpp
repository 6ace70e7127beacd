#include "ahead/sequence_poll.hpp"

#include <utility>
#include <vector>

#include "ahead/node_ranges.hpp"
#include "ahead/publish_next.hpp"
#include "partitions/catalog.hpp"
#include "registry/table_state.hpp"
#include "settings.hpp"

extern "C" {
#include "utils/timestamp.h"
}

namespace partheal::ahead {

// Whatever the position, every partition from its own up to the headroom
// must exist. A table that fell behind (a burst outran creation) is caught
// up, current partition first, re-reading the position before each
// creation: failed inserts burn ids fast, and a partition for a position
// already passed helps no one.

Draws draws_of(const pg::SequencePosition& seq) {
  return Draws{seq.drawn ? seq.last : seq.next, seq.drawn, seq.increment, seq.cache};
}

std::optional<Watched> poll_sequence(const worker::Look& look, TableWatch& watch) {
  const registry::ManagedTable& table = look.table;
  const Oid relid = look.relid;
  Relation rel = look.rel;
  std::optional<pg::SequencePosition> read = pg::read_sequence(table.shape.sequence, false);
  if (!read) return std::nullopt;  // ALTER SEQUENCE under way: next round, never a wait
  const pg::SequencePosition& seq = *read;
  const int64 size = table.config.partition_size;
  const Draws draws = draws_of(seq);
  // No nextval returns more than MAXVALUE: a partition past it (a smallint
  // sequence feeding a bigint key) would never hold a row.
  const int64 reachable = Min(table.shape.key_max, seq.max_value);
  // Observed before the first draw too, so the first burst's rate is
  // known at the first look that sees it, not one round later.
  observe(watch.traffic, seq.last, GetCurrentTimestamp() / 1000);
  // premake partitions after the position's own are kept whatever the
  // traffic: a headroom of premake + 1, since one of the headroom is only
  // made once the position reaches its partition's mark (needed()).
  int room = Max(table.config.premake + 1,
                 headroom(watch.traffic, partition_step(seq.increment, size),
                          settings::ahead_seconds, settings::max_ahead_partitions));
  // The watermark follows the ids in use: a sequence moved back (RESTART,
  // setval) must not leave the marks above it claimed for good.
  const int64 ceiling = watermark_ceiling(draws, size, table.config.mark_percent);
  registry::with_state(relid, [&](registry::TableState& s) {
    pg_atomic_write_u32(&s.headroom, static_cast<uint32>(room));
    registry::pull_watermark_down(&s, ceiling);
  });
  // Only a table missing a partition its draws need is caught up: an idle
  // one costs this look at its partition descriptor, nothing more.
  const std::vector<int64> ids =
      needed_ids(draws, size, table.config.mark_percent, room, reachable);
  std::optional<int64> missing;
  for (int64 id : ids)
    if (!missing && !partitions::routes(rel, id)) missing = id;
  publish_next(relid, draws, table, ids, missing);
  std::vector<std::vector<int64>> other_ids =
      other_nodes_ids(relid, rel->rd_rel->relowner, table, seq, watch.nodes);
  for (const std::vector<int64>& node_ids : other_ids)
    for (int64 id : node_ids)
      if (!missing && !partitions::routes(rel, id)) missing = id;
  if (!missing) return std::nullopt;
  Watched w{};
  w.relid = relid;
  w.sequence = table.shape.sequence;
  w.size = size;
  w.mark_percent = table.config.mark_percent;
  w.key_max = reachable;
  w.headroom = room;
  w.spec = table.key_spec();
  w.other_nodes_ids = std::move(other_ids);
  return w;
}

}  // namespace partheal::ahead
