// Retention's batches: a table more than kBehindPast partitions behind its
// horizon has its due ones go together, up to kMostInBatch under one hold
// of the parent (a DETACH and a DROP each, 2 to 6 ms on a busy 2-core box),
// rather than one a round. Polled once, then queued for one slice
// (retention/detach.hpp): polling alone never finds the parent free while
// appenders follow each other. Batches that fail for their locks for 5 s
// give way to the one-at-a-time path (DETACH CONCURRENTLY where it can);
// one that fails otherwise is taken back whole, and the table's partitions
// go one at a time for a minute, each failure said for its own.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "attach/window.hpp"
#include "partitions/catalog.hpp"
#include "pg/postgres.hpp"
#include "retention/watch.hpp"

namespace partheal::retention {

constexpr int kBatchesPerRound = 8;

// A partition of a batch, as said in the log.
struct Retired {
  std::string label;
  std::string bounds;
  std::string horizon;
};

struct Batch {
  std::vector<Retired> retired;  // detached together (and dropped)
  long held_ms = 0;              // how long the parent was held
  bool one_at_a_time = true;     // false: nothing more for the table this round
};

// Inside the worker's transaction: the table's due partitions, oldest
// first, that may go together, in one hold. `said` describes a partition
// while its name is still in the catalog; `parent` is the step's one read
// of the parent, asked for only when a batch may go.
Batch try_batch(const std::function<const attach::Parent&()>& parent, TableWatch& watch,
                const std::vector<const partitions::Partition*>& due_now, bool keep_table,
                const std::function<Retired(const partitions::Partition&)>& said);

// After a batch committed: said in the log (PHL09), and the table is not
// failing any more.
void say_batch(Oid relid, TableWatch& watch, const Batch& batch, bool kept);

}  // namespace partheal::retention
