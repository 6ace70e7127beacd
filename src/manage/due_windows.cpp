// What a registration's retention will remove: said at once, in a NOTICE,
// since the worker acts on it at its first poll after the commit (issue 35,
// point 15: six windows holding rows went within a second, unannounced).
#include <fmt/format.h>

#include <string>
#include <vector>

#include "manage/due_windows_internal.hpp"
#include "partitions/catalog.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/report.hpp"
#include "retention/horizon.hpp"

extern "C" {
#include "access/relation.h"
#include "utils/rel.h"
}

namespace partheal::manage {

namespace {

constexpr size_t kListed = 10;  // windows named in the DETAIL; the rest counted

}  // namespace

size_t say_due_windows(const registry::TableShape& shape, const registry::Config& config) {
  if (!config.retains()) return 0;
  const registry::ManagedTable table{shape, config};
  Relation rel = pg::guard([&] { return relation_open(shape.relid, AccessShareLock); });
  std::vector<partitions::Partition> parts = partitions::attached_partitions(rel);
  const Oid owner = pg::guard([&] { return rel->rd_rel->relowner; });
  pg::guard([&] { relation_close(rel, NoLock); });
  // As the worker reads it, without waiting for a sequence or asking other
  // Citus nodes: what is certain now.
  const retention::RetentionHorizon horizon =
      retention::retention_horizon(table, owner, false, false);
  if (!horizon.any()) return 0;
  const partitions::KeySpace keys = table.key_space();
  std::vector<std::string> due;
  for (const partitions::Partition& part : parts) {
    std::optional<int64> h = horizon.of(part.range);
    if (!h || part.range.upper.kind != partitions::Bound::Kind::kValue ||
        part.range.upper.value > *h)
      continue;
    if (due.size() < kListed)
      due.push_back(fmt::format("{} FOR VALUES FROM ({}) TO ({})", pg::relation_label(part.relid),
                                keys.bound_sql(part.range.lower),
                                keys.bound_sql(part.range.upper)));
    else
      due.push_back({});
  }
  if (due.empty()) return 0;
  std::string listed;
  for (size_t i = 0; i < due.size() && i < kListed; ++i) listed += (i ? "; " : "") + due[i];
  if (due.size() > kListed) listed += fmt::format("; and {} more", due.size() - kListed);
  pg::report(
      NOTICE, 0,
      fmt::format("retention will {} {} partition{} of \"{}\" at the worker's next poll",
                  config.retention_keep_table ? "detach (and keep as tables)" : "detach and drop",
                  due.size(), due.size() == 1 ? "" : "s", shape.name),
      {fmt::format("Their upper bounds are at or before the retention horizon ({}): {}.",
                   config.by_time ? "now minus the retention"
                                  : "the highest id the rows hold minus the retention",
                   listed),
       config.retention_keep_table
           ? "Run partheal_unmanage, or ROLLBACK a registration made in a transaction, to keep "
             "them attached."
           : "Run partheal_unmanage, or ROLLBACK a registration made in a transaction, before "
             "the worker acts; retention_keep_table => true keeps such partitions as tables."});
  return due.size();
}

}  // namespace partheal::manage
