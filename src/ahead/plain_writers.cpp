// For writers that do not call partheal_append (ORMs, COPY, INSERT ...
// SELECT): partheal_nextval, the id default that checks the mark as an
// append does, and partheal_reserve, which creates the partitions a bulk
// load will need before it starts. Both end in the one heal loop or the one
// create-ahead queue.
#include <fmt/format.h>

#include <vector>

#include "ahead/headroom.hpp"
#include "ahead/mark.hpp"
#include "ahead/sequence.hpp"
#include "heal/bounds.hpp"
#include "heal/heal_loop.hpp"
#include "heal/partition_math.hpp"
#include "manage/registry.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/relation.hpp"
#include "settings.hpp"

extern "C" {
#include "access/relation.h"
#include "access/xact.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "tcop/utility.h"
}

namespace partheal::ahead {

namespace {

bool may_insert(Oid relid) {
  return pg::guard(
      [&] { return pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) == ACLCHECK_OK; });
}

// A registration whose id sequence is `sequence`; nullptr when the table is
// not registered. Cheap when this backend has the table cached.
manage::TablePtr registration(Oid relid) {
  manage::TablePtr table = manage::cached(relid);
  if (table != nullptr) return table;
  // Checked before any lock: a role that may not insert into the table
  // must not be able to lock it (and so queue its owner's DDL) through us.
  if (!may_insert(relid)) return nullptr;
  Relation rel = pg::open_existing(relid, AccessShareLock);
  table = manage::lookup(rel);
  pg::guard([&] { relation_close(rel, NoLock); });
  return table;
}

[[noreturn]] void null_argument(const char* name, const char* signature) {
  pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, fmt::format("{} must not be NULL", name), {}, signature);
}

// Partitions a single call may create: an owner's bulk load, bounded so that
// a typo cannot flood the catalog.
constexpr int64 kOwnerReserveLimit = 10000;

}  // namespace

}  // namespace partheal::ahead

using namespace partheal;

// partheal_nextval(parent regclass, sequence regclass) RETURNS bigint
PARTHEAL_SQL_FUNCTION(partheal_nextval) {
  constexpr const char* kSignature =
      "partheal_nextval(parent regclass, sequence regclass) draws the next id of the table's "
      "sequence; use it as the id column's default.";
  if (PG_ARGISNULL(0)) ahead::null_argument("parent", kSignature);
  if (PG_ARGISNULL(1)) ahead::null_argument("sequence", kSignature);
  Oid relid = PG_GETARG_OID(0);
  Oid sequence = PG_GETARG_OID(1);
  // Every refusal comes before the draw: a sequence does not give back an
  // id drawn by a call that then failed.
  if (!pg::guard([&] { return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(sequence)); }))
    pg::fail(ERRCODE_UNDEFINED_TABLE, fmt::format("relation with OID {} does not exist", sequence));
  manage::TablePtr table = settings::preloaded() ? ahead::registration(relid) : nullptr;
  // A caller who may not insert into the table learns nothing about it:
  // the same plain nextval as for a table that is not registered.
  if (table != nullptr && table->shape.sequence != sequence && ahead::may_insert(relid)) {
    const char* name = pg::guard([&] { return get_rel_name(sequence); });
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("\"{}\" is not the id sequence of \"{}\"", name != nullptr ? name : "?",
                         table->shape.name),
             {}, "Pass the sequence the table's id column draws from.");
  }
  // nextval's own privilege check: USAGE or UPDATE on the sequence.
  int64 id = pg::guard([&] { return nextval_internal(sequence, true); });
  // Unregistered: a plain nextval, so a default left behind keeps working.
  if (table == nullptr || table->shape.sequence != sequence) return Int64GetDatum(id);
  const int64 size = table->config.partition_size;
  const int percent = table->config.mark_percent;
  if (percent == 0) return Int64GetDatum(id);
  int64 increment = table->shape.sequence_increment;
  // Only a caller who may insert into the table asks for its partitions.
  if (ahead::mark_target(id, increment, size, percent) && ahead::may_insert(relid))
    (void)ahead::after_draw(relid, id, increment);
  return Int64GetDatum(id);
}

// partheal_reserve(parent regclass, ids bigint) RETURNS integer
PARTHEAL_SQL_FUNCTION(partheal_reserve) {
  constexpr const char* kSignature =
      "partheal_reserve(parent regclass, ids bigint) creates the partitions the next ids values "
      "of the table's sequence need.";
  settings::require_preloaded();
  if (PG_ARGISNULL(0)) ahead::null_argument("parent", kSignature);
  if (PG_ARGISNULL(1)) ahead::null_argument("ids", kSignature);
  Oid relid = PG_GETARG_OID(0);
  int64 count = PG_GETARG_INT64(1);
  if (count <= 0)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("ids must be greater than zero, not {}", count), {},
             "Give how many ids the coming load will draw, for example the row count of a COPY.");
  // Partitions are committed by the worker and outlive this transaction:
  // refuse before anything is created.
  pg::guard([] { PreventCommandIfReadOnly("partheal_reserve()"); });
  manage::Opened opened = manage::open_for_insert(relid);
  Relation parent = opened.parent;
  manage::TablePtr table = opened.table;
  const manage::TableShape& shape = table->shape;
  const int64 size = table->config.partition_size;
  ahead::SequencePosition seq = *ahead::read_sequence(shape.sequence, true);
  if (seq.increment < 0)
    pg::fail(ERRCODE_FEATURE_NOT_SUPPORTED,
             fmt::format("the id sequence of \"{}\" descends", shape.name), {},
             "partheal_reserve covers ascending sequences only.");
  // The ids the next `count` draws return, clipped to the key type.
  __int128 first = seq.next;
  __int128 last = first + static_cast<__int128>(count - 1) * seq.increment;
  if (first > shape.key_max) {
    pg::guard([&] { relation_close(parent, NoLock); });
    return Int32GetDatum(0);
  }
  if (last > shape.key_max) last = shape.key_max;
  int64 first_n = heal::partition_number(static_cast<int64>(first), size);
  int64 last_n = heal::partition_number(static_cast<int64>(last), size);
  // With an increment larger than a partition every draw lands in a
  // partition of its own, and the partitions between are never used.
  const bool sparse = seq.increment > size;
  __int128 partitions =
      sparse ? (last - first) / seq.increment + 1 : static_cast<__int128>(last_n) - first_n + 1;
  bool owner = pg::guard([&] { return pg::compat::owns_relation(relid, GetUserId()); });
  int64 limit = owner ? ahead::kOwnerReserveLimit : settings::max_ahead_partitions;
  if (partitions > limit)
    pg::fail(owner ? ERRCODE_PROGRAM_LIMIT_EXCEEDED : ERRCODE_INSUFFICIENT_PRIVILEGE,
             fmt::format("reserving {} ids of \"{}\" needs {} partitions, more than the {} one "
                         "call may create{}",
                         count, shape.name, static_cast<int64>(partitions), limit,
                         owner ? "" : " for a non-owner"),
             owner ? std::string()
                   : std::string("A role that does not own the table may reserve at most "
                                 "partheal.max_ahead_partitions partitions past the sequence "
                                 "position."),
             owner ? "Reserve in several calls, or use a larger partition_size."
                   : "Reserve fewer ids, or ask the table's owner to reserve them.");
  // One id per partition the load will touch: the first it will draw there.
  std::vector<int64> ids;
  ids.reserve(static_cast<size_t>(partitions));
  for (__int128 id = first; sparse && id <= last; id += seq.increment)
    ids.push_back(static_cast<int64>(id));
  for (int64 n = first_n; !sparse && n <= last_n; ++n) {
    int64 start = 0;
    if (!heal::first_id_of(n, size, shape.key_max, &start)) break;
    ids.push_back(n == first_n ? static_cast<int64>(first) : start);
  }
  size_t before = heal::attached_ranges(parent).size();
  heal::cover(*table, parent, ids);
  heal::refresh_partitions(parent);
  size_t after = heal::attached_ranges(parent).size();
  pg::guard([&] { relation_close(parent, NoLock); });
  return Int32GetDatum(static_cast<int32>(after > before ? after - before : 0));
}
