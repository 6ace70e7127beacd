// A row the statement's partitions do not cover: the C++ side of the gate,
// which asks the heal loop for the partition, as partheal_append does.
#include <fmt/format.h>

#include <vector>

#include "append/on_coordinator.hpp"
#include "gate/gate_internal.hpp"
#include "heal/explicit_ids.hpp"
#include "heal/heal_loop.hpp"
#include "partitions/catalog.hpp"
#include "pg/boundary.hpp"
#include "registry/registry.hpp"

namespace partheal::gate {

namespace {

Miss cover_key(Relation parent, int64 key, bool key_null, int64 row) {
  registry::TablePtr table = registry::lookup(parent);
  // A Citus worker node's table is registered on the coordinator: its
  // INSERTs arrive as shard INSERTs, which the gate never sees.
  if (table == nullptr || table->registered_on_coordinator) return Miss::kNotOurs;
  const registry::TableShape& shape = table->shape;
  if (key_null)
    pg::fail(ERRCODE_NOT_NULL_VIOLATION,
             fmt::format("row {} gives a null \"{}\"", row, shape.key_column),
             "A row with a null partition key has no partition to go to.",
             fmt::format("Give \"{}\" a value, or leave it out to take the column's default.",
                         shape.key_column));
  // Attached after the statement began (by the worker's create-ahead, or
  // another session's heal): the statement only needs to see it.
  partitions::refresh_partitions(parent);
  if (partitions::routes(parent, key)) return Miss::kFound;
  // The rules partheal_append applies, before anything is created. A plain
  // INSERT's id may have come from the sequence or from the statement; the
  // gate cannot tell, so it is judged as given: an id the sequence just drew
  // is inside the window a non-owner may heal. The caller is judged as the
  // role outside any SECURITY DEFINER function too.
  const std::vector<int64> keys{key};
  heal::refuse_keys_past_retention(*table, parent, keys);
  if (shape.key_is_time)
    heal::refuse_far_windows(*table, parent, keys, heal::Judged::kAlsoOuterUser);
  else
    heal::refuse_explicit_ids_out_of_window(*table, parent, keys, false,
                                            heal::Judged::kAlsoOuterUser);
  // Under partheal_append's own INSERT into this table (a partition lost
  // between its check and its INSERT), the heal is the append's.
  const bool appending = heal::append_insert_running() == RelationGetRelid(parent);
  // The catalog was read just above: the loop heals at once.
  int heals = heal::cover(*table, parent, keys, append::partition_maker(*table, keys),
                          appending ? heal::HealPath::kAppend : heal::HealPath::kInsert, true);
  return heals > 0 ? Miss::kHealed : Miss::kFound;
}

}  // namespace

Miss on_miss(Relation parent, int64 key, bool key_null, int64 row) {
  Miss outcome = Miss::kNotOurs;
  pg::entry([&] { outcome = cover_key(parent, key, key_null, row); });
  return outcome;
}

bool is_managed(Oid relid) {
  bool managed = false;
  pg::entry([&] { managed = registry::registered_for_planning(relid); });
  return managed;
}

}  // namespace partheal::gate
