#include "citus/table.hpp"

#include <fmt/format.h>

#include "citus/attach.hpp"
#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/citus.hpp"

extern "C" {
#include "utils/lsyscache.h"
}

namespace partheal::citus {

Table Table::of(Oid relid) {
  Table t;
  t.relid_ = relid;
  t.in_metadata_ = pg::citus::is_citus_table(relid);
  return t;
}

bool Table::on_worker_node() const {
  return in_metadata_ && pg::citus::role() == pg::citus::Role::kWorker;
}

bool Table::on_coordinator() const {
  return in_metadata_ && pg::citus::role() == pg::citus::Role::kCoordinator;
}

void Table::refuse_on_worker_node(const std::string& what, const std::string& hint) const {
  if (!on_worker_node()) return;
  std::string coordinator = pg::citus::coordinator_address();
  const Oid relid = relid_;
  const char* name = pg::guard([&] { return get_rel_name(relid); });
  pg::fail(errors::kNotOnCoordinator,
           fmt::format("\"{}\" is a Citus table: {} on the coordinator{}, not on a worker node",
                       name != nullptr ? name : "?", what,
                       coordinator.empty() ? "" : fmt::format(" ({})", coordinator)),
           "partheal's registrations and the partitions it makes live on the coordinator, and "
           "Citus copies every partition to this node.",
           hint);
}

void Table::with_lock_bound_on_nodes(int ms, int caller_ms, const std::function<void()>& f) const {
  if (in_metadata_) pg::citus::set_lock_timeout_on_nodes(ms);
  f();
  if (in_metadata_) pg::citus::restore_lock_timeout_on_nodes(caller_ms);
}

bool Table::distributes_on_attach(Oid partition) const {
  return in_metadata_ && !pg::citus::is_citus_table(partition);
}

void Table::sequential_if_long_shard_names(const std::string& partition_name) const {
  if (in_metadata_) citus::sequential_if_long_shard_names(relid_, partition_name);
}

std::optional<std::string> Table::lock_held_that_distribution_needs() const {
  if (!in_metadata_) return std::nullopt;
  return pg::citus::citus_lock_held();
}

}  // namespace partheal::citus
