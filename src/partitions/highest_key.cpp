#include "partitions/highest_key.hpp"

#include <vector>

#include "partitions/catalog.hpp"
#include "partitions/parent.hpp"
#include "pg/boundary.hpp"
#include "pg/relation.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
}

namespace partheal::partitions {

namespace {

// max(column) of one partition (with its own partitions, if it has any),
// above `above` when given; nullopt for no row. False when the partition
// was locked.
bool max_of(Oid part, const std::string& column, Oid key_type, std::optional<int64> above,
            std::optional<int64>* out) {
  if (!pg::guard([&] { return ConditionalLockRelationOid(part, AccessShareLock); })) return false;
  const std::string schema =
      pg::guarded_text([&] { return get_namespace_name(get_rel_namespace(part)); });
  const std::string name = pg::guarded_text([&] { return get_rel_name(part); });
  if (name.empty()) {  // dropped since the parent's partitions were read
    out->reset();
    return true;
  }
  std::string sql =
      "SELECT max(" + pg::quoted(column) + ") FROM " + pg::quoted(schema) + "." + pg::quoted(name);
  Oid type = key_type;
  Datum value = 0;
  pg::spi::Args args;
  if (above) {
    sql += " WHERE " + pg::quoted(column) + " > $1";
    // Below the highest partition's rows, within the key type.
    value = key_type == INT2OID   ? Int16GetDatum(static_cast<int16>(*above))
            : key_type == INT4OID ? Int32GetDatum(static_cast<int32>(*above))
                                  : Int64GetDatum(*above);
    args = pg::spi::Args{1, &type, &value, nullptr};
  }
  pg::spi::execute(sql, SPI_OK_SELECT, args, true);
  std::optional<Datum> m = pg::spi::value(0, 1);
  if (m)
    *out = key_to_int64(*m, key_type);
  else
    out->reset();
  return true;
}

}  // namespace

HighestKey highest_key(Oid parent_oid, const std::string& column) {
  HighestKey h;
  Relation parent = pg::open_existing(parent_oid, NoLock);
  const Parent facts = read_parent(parent);
  int64 key_min = 0;
  int64 key_max = 0;
  key_limits(facts, &key_min, &key_max);  // 0A000 unless an integer or time key
  std::vector<Partition> parts = attached_partitions(parent);
  pg::guard([&] { relation_close(parent, NoLock); });
  std::optional<int64> found;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    std::optional<int64> m;
    if (!max_of(it->relid, column, facts.key_type, std::nullopt, &m)) return h;
    if (m) {
      found = m;
      break;
    }
  }
  if (facts.default_relid != InvalidOid) {
    std::optional<int64> m;
    if (!max_of(facts.default_relid, column, facts.key_type, found, &m)) return h;
    if (m) found = m;
  }
  h.known = true;
  h.key = found;
  return h;
}

}  // namespace partheal::partitions
