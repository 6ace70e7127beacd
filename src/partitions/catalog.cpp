#include "partitions/catalog.hpp"

#include "partitions/time_zone.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_partitioned_table.h"
#include "catalog/pg_type.h"
#include "nodes/parsenodes.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/partcache.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
}

namespace partheal::partitions {

using pg::fail;
using pg::guard;

void refresh_partitions(Relation parent) {
  Oid relid = RelationGetRelid(parent);
  guard([&] {
    AcceptInvalidationMessages();
    InvalidateCatalogSnapshot();
    // The entry stays valid for its holders (it is rebuilt in place); only
    // its partition descriptor is dropped, to be read again on next use.
    RelationCacheInvalidateEntry(relid);
  });
}

int64 key_to_int64(Datum d, Oid type) {
  switch (type) {
    case INT2OID:
      return DatumGetInt16(d);
    case INT4OID:
    case DATEOID:  // DateADT: days since 2000-01-01
      return DatumGetInt32(d);
    default:  // bigint; timestamp and timestamptz: microseconds since 2000-01-01
      return DatumGetInt64(d);
  }
}

bool integer_key_limits(Oid type, int64* min, int64* max) {
  switch (type) {
    case INT2OID:
      *min = PG_INT16_MIN;
      *max = PG_INT16_MAX;
      return true;
    case INT4OID:
      *min = PG_INT32_MIN;
      *max = PG_INT32_MAX;
      return true;
    case INT8OID:
      *min = PG_INT64_MIN;
      *max = PG_INT64_MAX;
      return true;
    default:
      return false;
  }
}

Oid default_partition(Relation parent) {
  return guard([&] {
    PartitionDesc desc = RelationGetPartitionDesc(parent, true);
    return desc->nparts > 0 && desc->boundinfo != nullptr &&
                   partition_bound_has_default(desc->boundinfo)
               ? desc->oids[desc->boundinfo->default_index]
               : InvalidOid;
  });
}

Oid default_partition_unlocked(Oid relid) {
  return guard([&] {
    HeapTuple tuple = SearchSysCache1(PARTRELID, ObjectIdGetDatum(relid));
    if (!HeapTupleIsValid(tuple)) return InvalidOid;
    Oid found = reinterpret_cast<Form_pg_partitioned_table>(GETSTRUCT(tuple))->partdefid;
    ReleaseSysCache(tuple);
    return found;
  });
}

namespace {

// A range bound as the key space holds it: MINVALUE, MAXVALUE or a value,
// whether it comes from the partition descriptor or a stored bound spec.
Bound bound_of(PartitionRangeDatumKind kind, Datum value, Oid type) {
  switch (kind) {
    case PARTITION_RANGE_DATUM_MINVALUE:
      return Bound::min();
    case PARTITION_RANGE_DATUM_MAXVALUE:
      return Bound::max();
    case PARTITION_RANGE_DATUM_VALUE:
      break;
  }
  return Bound::at(key_to_int64(value, type));
}

Bound bound_at(PartitionBoundInfo bi, int i, Oid type) {
  return bound_of(bi->kind[i][0], bi->datums[i][0], type);
}

struct Snapshot {
  PartitionBoundInfo bounds;
  Oid key_type;
  const Oid* oids;  // by partition index
};

Snapshot read(Relation parent) {
  return guard([&] {
    PartitionDesc desc = RelationGetPartitionDesc(parent, true);
    PartitionKey key = RelationGetPartitionKey(parent);
    return Snapshot{desc->nparts > 0 ? desc->boundinfo : nullptr, key->parttypid[0], desc->oids};
  });
}

}  // namespace

std::optional<Bound> newest_upper(Relation parent) {
  Snapshot s = read(parent);
  if (s.bounds == nullptr) return std::nullopt;
  for (int i = s.bounds->ndatums - 1; i > 0; --i)
    if (s.bounds->indexes[i] >= 0) return bound_at(s.bounds, i, s.key_type);
  return std::nullopt;
}

std::vector<Range> attached_ranges(Relation parent) {
  Snapshot s = read(parent);
  std::vector<Range> out;
  if (s.bounds == nullptr) return out;
  // indexes[i + 1] is the partition whose range ends at datums[i + 1].
  for (int i = 0; i + 1 < s.bounds->ndatums; ++i) {
    if (s.bounds->indexes[i + 1] < 0) continue;
    out.push_back(Range{bound_at(s.bounds, i, s.key_type), bound_at(s.bounds, i + 1, s.key_type)});
  }
  return out;
}

std::vector<Partition> attached_partitions(Relation parent) {
  Snapshot s = read(parent);
  std::vector<Partition> out;
  if (s.bounds == nullptr) return out;
  for (int i = 0; i + 1 < s.bounds->ndatums; ++i) {
    int index = s.bounds->indexes[i + 1];
    if (index < 0) continue;
    out.push_back(Partition{s.oids[index], Range{bound_at(s.bounds, i, s.key_type),
                                                 bound_at(s.bounds, i + 1, s.key_type)}});
  }
  return out;
}

namespace {

// The last bound at or below id (-1 for none); the partition above it, if
// any (indexes[found + 1]), holds id.
int bound_below(PartitionBoundInfo bi, Oid key_type, int64 id) {
  int lo = 0, hi = bi->ndatums - 1, found = -1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    Bound b = bound_at(bi, mid, key_type);
    bool at_or_below =
        b.kind == Bound::Kind::kMinValue || (b.kind == Bound::Kind::kValue && b.value <= id);
    if (at_or_below) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
}

bool routes_in(const Snapshot& s, int64 id, bool to_default = true) {
  PartitionBoundInfo bi = s.bounds;
  if (bi == nullptr) return false;
  if (to_default && partition_bound_has_default(bi)) return true;
  int found = bound_below(bi, s.key_type, id);
  return found >= 0 && bi->indexes[found + 1] >= 0;
}

}  // namespace

DescriptorRoute route_in_descriptor(PartitionDesc desc, Oid key_type, int64 key, bool key_null) {
  DescriptorRoute route;
  PartitionBoundInfo bi = desc->nparts > 0 ? desc->boundinfo : nullptr;
  if (bi == nullptr) return route;
  int found = key_null ? -1 : bound_below(bi, key_type, key);
  if (found >= 0 && found + 1 < bi->ndatums && bi->indexes[found + 1] >= 0) {
    route.to = DescriptorRoute::To::kPartition;
    route.range = Range{bound_at(bi, found, key_type), bound_at(bi, found + 1, key_type)};
  } else if (partition_bound_has_default(bi)) {
    route.to = DescriptorRoute::To::kDefault;
  }
  return route;
}

bool routes(Relation parent, int64 id) {
  return routes_in(read(parent), id);
}

bool has_own_partition(Relation parent, int64 id) {
  return routes_in(read(parent), id, false);
}

std::vector<int64> unrouted(Relation parent, const std::vector<int64>& ids) {
  Snapshot s = read(parent);
  std::vector<int64> out;
  for (int64 id : ids)
    if (!routes_in(s, id)) out.push_back(id);
  return out;
}

namespace {

Bound spec_bound(List* datums, Oid type) {
  auto* d = static_cast<PartitionRangeDatum*>(linitial(datums));
  const Datum value =
      d->kind == PARTITION_RANGE_DATUM_VALUE ? castNode(Const, d->value)->constvalue : Datum(0);
  return bound_of(d->kind, value, type);
}

}  // namespace

std::optional<Partition> pending_detach(Relation parent) {
  const Oid relid = RelationGetRelid(parent);
  // pg_inherits by parent: the catalog, not the partition descriptor, which
  // leaves a pending partition out.
  const Oid pending = guard([&] {
    Oid found = InvalidOid;
    Relation inherits = table_open(InheritsRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_inherits_inhparent, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(relid));
    SysScanDesc scan = systable_beginscan(inherits, InheritsParentIndexId, true, nullptr, 1, &key);
    HeapTuple tuple = nullptr;
    while ((tuple = systable_getnext(scan)) != nullptr) {
      auto* row = reinterpret_cast<Form_pg_inherits>(GETSTRUCT(tuple));
      if (row->inhdetachpending) found = row->inhrelid;
    }
    systable_endscan(scan);
    table_close(inherits, AccessShareLock);
    return found;
  });
  if (!OidIsValid(pending)) return std::nullopt;
  const Oid type = guard([&] { return RelationGetPartitionKey(parent)->parttypid[0]; });
  PartitionBoundSpec* spec = guard([&] {
    PartitionBoundSpec* read = nullptr;
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(pending));
    if (HeapTupleIsValid(tuple)) {
      bool isnull = true;
      Datum bound = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_relpartbound, &isnull);
      if (!isnull) read = castNode(PartitionBoundSpec, stringToNode(TextDatumGetCString(bound)));
      ReleaseSysCache(tuple);
    }
    return read;
  });
  if (spec == nullptr || spec->strategy != PARTITION_STRATEGY_RANGE || spec->is_default)
    return std::nullopt;
  return Partition{pending,
                   Range{spec_bound(spec->lowerdatums, type), spec_bound(spec->upperdatums, type)}};
}

}  // namespace partheal::partitions
