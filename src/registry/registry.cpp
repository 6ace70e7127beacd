#include <fmt/format.h>

#include <iterator>
#include <unordered_map>

#include "registry/config_table_internal.hpp"
#include "registry/registry.hpp"
#include "registry/table_state.hpp"
#include "pg/boundary.hpp"
#include "citus/citus.hpp"
#include "pg/compat.hpp"
#include "pg/guc_level.hpp"
#include "pg/relation.hpp"
#include "partitions/time_zone.hpp"
#include "pg/spi.hpp"
#include "settings.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/syscache.h"
}

namespace partheal::registry {

using pg::fail;
using pg::guard;

namespace {

struct Entry {
  TablePtr table;
  bool shape_stale = false;  // the parent changed: re-read it from the relcache
};

// Allocated once and never destroyed: no destructor of a cache may run at
// exit(), when PostgreSQL's state is being torn down.
std::unordered_map<Oid, Entry>& cache() {
  static auto* entries = new std::unordered_map<Oid, Entry>();
  return *entries;
}

// Partitioned tables the planner asked about, and whether each has a
// registration, while that answer holds: planning an INSERT reads the
// config table once per table, not once per plan. Any relcache
// invalidation of the table (a registration sends one, and so does every
// ATTACH) marks the answer stale; the callback never frees, the next
// question does.
struct PlanAnswer {
  bool valid;
  bool registered;
};
std::unordered_map<Oid, PlanAnswer>& plan_answers() {
  static auto* answers = new std::unordered_map<Oid, PlanAnswer>();
  return *answers;
}
bool plan_answers_stale = false;  // every answer: ask again
// Answers marked stale since the last sweep (a dropped table's among them).
size_t plan_answers_marked = 0;
constexpr size_t kPlanAnswersKept = 10000;  // a session churning tables starts over past this

// Set by the invalidation callback, acted on at the next lookup.
bool registrations_stale = false;  // every entry: re-read the config table
bool sweep_due = false;            // some entry may belong to a dropped table
uint64_t forgotten = 0;

// Runs inside PostgreSQL's invalidation processing: marks, never allocates
// and never frees (a Relation of an entry's table may be in use right now).
void on_relcache_invalidation(Datum, Oid relid) noexcept {
  if (relid == InvalidOid || relid == last_config_relid()) {
    registrations_stale = true;
    sweep_due = true;
    plan_answers_stale = true;
    return;
  }
  auto answer = plan_answers().find(relid);
  if (answer != plan_answers().end() && answer->second.valid) {
    answer->second.valid = false;
    ++plan_answers_marked;
  }
  auto& entries = cache();
  auto it = entries.find(relid);
  if (it == entries.end()) return;
  it->second.shape_stale = true;
  sweep_due = true;
}

// ALTER SEQUENCE changes pg_sequence, not the table: an INCREMENT BY of a
// registered table's sequence would go unseen by the cached shape, whose
// increment the marks use. Rare, so every entry is read again.
void on_sequence_change(Datum, pg::compat::SyscacheId, uint32) noexcept {
  registrations_stale = true;
  sweep_due = true;
}

// Drops what the invalidations made stale: every entry when registrations
// changed (each is re-read on its next lookup), and the entries of tables
// that no longer exist, so a session that churns through tables keeps no
// memory for the ones it dropped.
void sweep() {
  if (!sweep_due) return;
  auto& entries = cache();
  size_t before = entries.size();
  if (registrations_stale) {
    entries.clear();
  } else {
    for (auto it = entries.begin(); it != entries.end();) {
      Oid relid = it->first;
      bool gone = it->second.shape_stale &&
                  !guard([&] { return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)); });
      it = gone ? entries.erase(it) : std::next(it);
    }
  }
  registrations_stale = false;
  sweep_due = false;
  if (entries.size() != before) ++forgotten;
}

}  // namespace

uint64_t forgotten_count() {
  return forgotten;
}

bool is_cached(Oid relid) {
  return cache().count(relid) > 0;
}

namespace {

// The coordinator's registration of a distributed table, cached here as a
// local one is, with no shared state: this node's partheal worker never
// makes its partitions.
TablePtr lookup_on_coordinator(Relation parent) {
  std::optional<Config> config = coordinator_config(parent);
  if (!config) return nullptr;
  auto table = std::make_shared<ManagedTable>();
  table->config = *config;
  table->shape = describe(parent);
  table->registered_on_coordinator = true;
  cache()[RelationGetRelid(parent)] = Entry{table, false};
  return table;
}

}  // namespace

Opened open_for_insert(Oid relid) {
  bool table_insert = false;
  guard([&] {
    // As INSERT checks: the table, or at least one column. The INSERT
    // itself then checks the columns it names, the id column among them.
    AclResult acl = pg_class_aclcheck(relid, GetUserId(), ACL_INSERT);
    table_insert = acl == ACLCHECK_OK;
    if (acl != ACLCHECK_OK &&
        pg_attribute_aclcheck_all(relid, GetUserId(), ACL_INSERT, ACLMASK_ANY) == ACLCHECK_OK)
      acl = ACLCHECK_OK;
    if (acl != ACLCHECK_OK) {
      const char* name = get_rel_name(relid);
      aclcheck_error(acl, OBJECT_TABLE, name != nullptr ? name : "?");
    }
  });
  Relation parent = pg::open_existing(relid, RowExclusiveLock);
  TablePtr table = lookup(parent);
  // A Citus table is registered on the coordinator, whose registration a
  // worker node's appends use.
  bool on_worker_node = false;
  if (table == nullptr && citus::Table::of(relid).on_worker_node()) {
    on_worker_node = true;
    table = lookup_on_coordinator(parent);
  }
  if (table == nullptr) {
    std::string coordinator = on_worker_node ? citus::coordinator_address() : std::string();
    fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
         fmt::format("\"{}\" is not managed by partheal{}", RelationGetRelationName(parent),
                     on_worker_node ? fmt::format(" on the coordinator ({})", coordinator) : ""),
         on_worker_node ? "A Citus table's registration lives on the coordinator." : "",
         on_worker_node
             ? "Register it on the coordinator: SELECT partheal_manage('table', partition_size)."
             : "Register it first: SELECT partheal_manage('table', partition_size).");
  }
  return Opened{parent, table, table_insert};
}

TablePtr cached(Oid relid) {
  sweep();
  auto& entries = cache();
  auto it = entries.find(relid);
  if (it == entries.end() || it->second.shape_stale) return nullptr;
  return it->second.table;
}

bool registered_for_planning(Oid relid) {
  auto& answers = plan_answers();
  if (plan_answers_stale || answers.size() > kPlanAnswersKept) {
    answers.clear();
    plan_answers_stale = false;
    plan_answers_marked = 0;
  } else if (plan_answers_marked > 64) {
    // A DROP TABLE marks its answer too: swept here, so a session that
    // churns through tables keeps no answer for the ones it dropped.
    for (auto it = answers.begin(); it != answers.end();)
      it = it->second.valid ? std::next(it) : answers.erase(it);
    plan_answers_marked = 0;
  }
  auto it = answers.find(relid);
  if (it != answers.end() && it->second.valid) return it->second.registered;
  // A database without the extension has nothing registered. Not
  // remembered: CREATE EXTENSION sends no invalidation of the table.
  if (!guard([] { return OidIsValid(get_extension_oid("partheal", true)); })) return false;
  // Whether a row exists, nothing more: the table's shape is read when a
  // row misses, so a registration whose table changed since (its id
  // default dropped) fails no INSERT that finds its partition.
  const bool registered = configured(relid).has_value();
  answers[relid] = PlanAnswer{true, registered};
  return registered;
}

TablePtr lookup(Relation parent) {
  sweep();
  Oid relid = RelationGetRelid(parent);
  auto& entries = cache();
  auto it = entries.find(relid);
  if (it != entries.end() && !it->second.shape_stale) return it->second.table;

  auto table = std::make_shared<ManagedTable>();
  if (it == entries.end()) {
    std::optional<Config> config = configured(relid);
    if (!config) return nullptr;
    table->config = *config;
    table->shape = describe(parent);
    // After a restart shared memory starts empty: the state comes back here.
    // If partheal.max_tables is full, heals still work; create-ahead and the
    // counters do not.
    (void)registry::track(relid, table->key_spec().fingerprint(), config->mark_percent,
                          table->shape.key_max);
  } else {
    table->config = it->second.table->config;
    table->registered_on_coordinator = it->second.table->registered_on_coordinator;
    table->shape = describe(parent);
  }
  // The caller holds a lock on the parent that keeps its shape from
  // changing, so what describe() read stays current whatever invalidations
  // it processed (a new partition changes nothing it reads).
  entries[relid] = Entry{table, false};
  return table;
}

partitions::KeySpec ManagedTable::key_spec() const {
  partitions::KeySpec spec;
  spec.min = shape.key_min;
  spec.max = shape.key_max;
  if (!config.by_time) {
    spec.cut = partitions::Cut::kIds;
    spec.step = config.partition_size;
    return spec;
  }
  partitions::IntervalCut cut = partitions::cut_of_interval(
      config.interval_months, config.interval_days, config.interval_us, shape.key_type == DATEOID);
  // partheal_manage refused any other interval; a config row written by
  // hand with one gets the day.
  spec.cut = cut.ok ? cut.cut : partitions::Cut::kDays;
  spec.step = cut.ok ? cut.step : 1;
  spec.date_key = shape.key_type == DATEOID;
  spec.zoned = shape.key_type == TIMESTAMPTZOID;
  strlcpy(spec.zone, spec.zoned ? config.time_zone.c_str() : "UTC", sizeof(spec.zone));
  return spec;
}

partitions::KeySpace ManagedTable::key_space() const {
  return partitions::space_of(key_spec());
}

bool ManagedTable::drains_default() const {
  return shape.key_is_time && config.drain_default && settings::drain_default;
}

void registrations_changed() {
  // Sent at commit to every backend: all of them re-read the config table.
  const Oid config = last_config_relid();
  if (config != InvalidOid) guard([&] { CacheInvalidateRelcacheByRelid(config); });
}

void table_registration_changed(Oid relid) {
  guard([&] { CacheInvalidateRelcacheByRelid(relid); });
}

void as_extension_owner(void (*f)(void*), void* ctx) {
  Oid owner = extension_row().owner;
  Oid saved_user = InvalidOid;
  int saved_context = 0;
  GetUserIdAndSecContext(&saved_user, &saved_context);
  guard([&] { SetUserIdAndSecContext(owner, saved_context | SECURITY_LOCAL_USERID_CHANGE); });
  try {
    f(ctx);
  } catch (...) {
    SetUserIdAndSecContext(saved_user, saved_context);
    throw;
  }
  SetUserIdAndSecContext(saved_user, saved_context);
}

void install_invalidation_callback() {
  CacheRegisterRelcacheCallback(on_relcache_invalidation, Datum(0));
  CacheRegisterSyscacheCallback(SEQRELID, on_sequence_change, Datum(0));
}

}  // namespace partheal::registry
