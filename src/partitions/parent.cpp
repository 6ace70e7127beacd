#include "partitions/parent.hpp"

#include "partitions/catalog.hpp"
#include "partitions/time_zone.hpp"
#include "pg/boundary.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
}

namespace partheal::partitions {

Parent read_parent(Relation rel) {
  Parent p;
  p.relid = RelationGetRelid(rel);
  p.name = RelationGetRelationName(rel);
  p.namespace_oid = RelationGetNamespace(rel);
  p.owner = rel->rd_rel->relowner;
  const Oid namespace_oid = p.namespace_oid;
  p.schema = pg::guarded_text([&] { return get_namespace_name(namespace_oid); });
  p.citus = citus::Table::of(p.relid);
  PartitionKey key = pg::guard([&] { return RelationGetPartitionKey(rel); });
  if (key != nullptr && key->strategy == PARTITION_STRATEGY_RANGE && key->partnatts == 1)
    p.key_type = key->parttypid[0];
  const Oid default_relid = default_partition(rel);
  if (!OidIsValid(default_relid)) return p;
  p.default_relid = default_relid;
  p.default_name = pg::guarded_text([&] { return get_rel_name(default_relid); });
  p.default_schema =
      pg::guarded_text([&] { return get_namespace_name(get_rel_namespace(default_relid)); });
  const char kind = pg::guard([&] { return get_rel_relkind(default_relid); });
  p.default_is_foreign = kind == RELKIND_FOREIGN_TABLE;
  p.default_is_partitioned = kind == RELKIND_PARTITIONED_TABLE;
  p.default_sql = pg::quoted(p.default_schema) + "." + pg::quoted(p.default_name);
  return p;
}

Windows read_windows(Relation rel) {
  Windows w;
  w.attached = attached_partitions(rel);
  w.pending = pending_detach(rel);
  return w;
}

std::vector<Range> Windows::taken() const {
  std::vector<Range> out;
  for (const Partition& p : attached) out.push_back(p.range);
  if (pending) out.push_back(pending->range);
  return out;
}

void key_limits(const Parent& parent, int64* min, int64* max) {
  if (OidIsValid(parent.key_type) &&
      (integer_key_limits(parent.key_type, min, max) || time_key_limits(parent.key_type, min, max)))
    return;
  pg::fail(
      ERRCODE_FEATURE_NOT_SUPPORTED,
      "\"" + parent.name + "\" is no longer partitioned by RANGE on one integer or time column");
}

}  // namespace partheal::partitions
