#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "manage/summary_internal.hpp"
#include "partitions/catalog.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "access/relation.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"
}

namespace partheal::manage {

namespace {

std::vector<partitions::Partition> attached(Oid relid) {
  Relation rel = pg::guard([&] { return relation_open(relid, AccessShareLock); });
  std::vector<partitions::Partition> parts = partitions::attached_partitions(rel);
  pg::guard([&] { relation_close(rel, NoLock); });
  return parts;
}

// An interval as PostgreSQL prints it ("1 day", "01:00:00", "1 mon").
std::string interval_text(int32 months, int32 days, int64 us) {
  return pg::guarded_text([&] {
    Interval* i = static_cast<Interval*>(palloc0(sizeof(Interval)));
    i->month = months;
    i->day = days;
    i->time = us;
    return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(i)));
  });
}

}  // namespace

std::string drain_reach_text(const registry::Config& config) {
  return config.has_drain_reach() ? interval_text(config.drain_reach_months,
                                                  config.drain_reach_days, config.drain_reach_us)
                                  : interval_text(0, 30, 0);
}

namespace {

std::string how_managed(const registry::Config& config) {
  std::string ahead = config.mark_percent == 0
                          ? "create-ahead off"
                          : fmt::format("{} kept ahead, the next made at {}% of the current one",
                                        config.premake, config.mark_percent);
  if (!config.by_time) return fmt::format("partitions of {} ids, {}", config.partition_size, ahead);
  return fmt::format(
      "windows of {} in {}, {} kept ahead{}",
      interval_text(config.interval_months, config.interval_days, config.interval_us),
      config.time_zone, config.premake,
      !config.drain_default ? ""
      : config.has_retention()
          ? ", DEFAULT drained back to the retention horizon"
          : fmt::format(", DEFAULT drained back {}", drain_reach_text(config)));
}

// Whether this transaction created the table: the worker's poll may attach
// a partition while a registration runs, which this call did not make.
bool created_here(Oid relid) {
  return pg::guard([&] {
    Relation rel = RelationIdGetRelation(relid);
    if (rel == nullptr) return false;
    bool created = rel->rd_createSubid != InvalidSubTransactionId;
    RelationClose(rel);
    return created;
  });
}

// A partition as \d+ lists it: its name, in the parent's schema.
std::string name_of(Oid relid) {
  return pg::guarded_text([&] { return get_rel_name(relid); });
}

}  // namespace

std::vector<Oid> attached_now(Oid relid) {
  std::vector<Oid> relids;
  for (const partitions::Partition& part : attached(relid)) relids.push_back(part.relid);
  return relids;
}

std::string registration_summary(const registry::TableShape& shape, const registry::Config& config,
                                 const std::vector<Oid>& before, size_t due) {
  std::vector<partitions::Partition> made;
  for (const partitions::Partition& part : attached(shape.relid))
    if (std::find(before.begin(), before.end(), part.relid) == before.end() &&
        created_here(part.relid))
      made.push_back(part);
  std::sort(made.begin(), made.end(), [](const auto& a, const auto& b) {
    const partitions::Bound &x = a.range.lower, &y = b.range.lower;
    return x.kind != y.kind ? x.kind < y.kind : x.value < y.value;
  });
  const char* noun = config.by_time ? "window" : "partition";
  std::string line = fmt::format("\"{}\" is managed: {}; ", shape.name, how_managed(config));
  if (made.empty())
    line += fmt::format("made no {}", noun);
  else if (made.size() == 1)
    line += fmt::format("made 1 {}, {}", noun, name_of(made.front().relid));
  else
    line += fmt::format("made {} {}s, {} to {}", made.size(), noun, name_of(made.front().relid),
                        name_of(made.back().relid));
  if (config.retains())
    line += due == 0 ? "; retention removes none yet"
                     : fmt::format("; retention will remove {} {}{} at the worker's next poll", due,
                                   noun, due == 1 ? "" : "s");
  return line;
}

Datum summary_datum(const std::string& line) {
  const char* text = line.c_str();
  return pg::guard([&] { return PointerGetDatum(cstring_to_text(text)); });
}

}  // namespace partheal::manage
