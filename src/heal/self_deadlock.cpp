#include <fmt/format.h>

#include <optional>
#include <string>

#include "errors.hpp"
#include "heal/self_deadlock.hpp"
#include "partitions/attach_locks.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/relation.hpp"

extern "C" {
#include "storage/lock.h"
#include "utils/rel.h"
}

namespace partheal::heal {

namespace {

[[noreturn]] void refuse(const registry::ManagedTable& table, Oid held_on, LOCKMODE held,
                         LOCKMODE needed, const std::string& why) {
  std::string parent = pg::relation_label(table.shape.relid);
  std::string other = pg::relation_label(held_on);
  const char* held_name = GetLockmodeName(DEFAULT_LOCKMETHOD, held);
  const char* needed_name = GetLockmodeName(DEFAULT_LOCKMETHOD, needed);
  pg::fail(errors::kHealLockConflict,
           fmt::format("cannot create a partition of {} while this transaction holds a lock on "
                       "{} that partition creation needs",
                       parent, other),
           fmt::format("This transaction holds {} on {}; attaching a partition takes {} on it{}.",
                       held_name, other, needed_name, why),
           held_on == table.shape.relid
               ? "Append before taking the stronger lock, or create the partition yourself."
               : fmt::format("Append to {} before writing to {} in the transaction, or create "
                             "its partitions in an earlier transaction (partheal_reserve).",
                             parent, other));
}

}  // namespace

void refuse_self_deadlock(const registry::ManagedTable& table, Relation parent) {
  Oid relid = RelationGetRelid(parent);
  // A Citus table's partition is created and distributed by the worker,
  // which takes Citus's own locks too: one this transaction holds (in the
  // middle of create_distributed_table, a shard move, a rebalance,
  // citus_add_node) would hold the worker until a timeout.
  if (std::optional<std::string> held = citus::Table::of(relid).lock_held_that_distribution_needs())
    pg::fail(errors::kHealLockConflict,
             fmt::format("cannot create a partition of {} while this transaction holds a lock "
                         "of Citus's that distributing the partition needs",
                         pg::relation_label(relid)),
             fmt::format("This transaction holds {}; the worker that creates and distributes "
                         "the partition takes Citus's colocation and shard locks.",
                         *held),
             "Append in a transaction of its own, before or after the Citus operation, or "
             "create the partitions in an earlier transaction (partheal_reserve).");
  std::optional<partitions::HeldAttachLock> held = partitions::held_attach_lock_conflict(relid);
  if (!held) return;
  if (held->held_on != relid || held->needed == ShareUpdateExclusiveLock)
    refuse(table, held->held_on, held->held, held->needed,
           held->held_on == relid ? "" : ", to clone a foreign key");
  // SHARE ROW EXCLUSIVE on the parent itself: a foreign key to itself.
  pg::fail(errors::kHealLockConflict,
           fmt::format("cannot create a partition of {} from an append: it has a foreign key "
                       "to itself",
                       pg::relation_label(relid)),
           "Attaching a partition to a table with a foreign key to itself takes SHARE ROW "
           "EXCLUSIVE on the table, which the append's own ROW EXCLUSIVE lock holds off.",
           "Have its partitions created ahead: keep create-ahead on, whose worker attaches "
           "between writers' transactions; or create them yourself.");
}

}  // namespace partheal::heal
