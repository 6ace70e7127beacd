// One step of retention for a table, inside the scheduler's transaction:
// the oldest due window that is not backing off or left for good is
// detached (and dropped); or a pending DETACH CONCURRENTLY is completed
// (FINALIZE); or, for a table more than two windows behind, a batch of due
// ones goes together (retention/batches.hpp).
#pragma once

#include <optional>
#include <string>

#include "retention/detach.hpp"
#include "pg/postgres.hpp"
#include "retention/back_off.hpp"
#include "retention/batches.hpp"

namespace partheal::retention {

struct Step {
  bool tried = false;
  Batch batch;  // detached together (and dropped), in one hold
  Oid partition = InvalidOid;
  std::string label;   // the window's table
  std::string bounds;  // FOR VALUES FROM (...) TO (...)
  std::string horizon;
  bool foreign = false;
  bool finalized = false;     // a pending DETACH CONCURRENTLY completed (FINALIZE)
  bool concurrent = false;    // DETACH CONCURRENTLY run, its DROP to follow
  bool keep = false;          // retention_keep_table
  bool due = true;            // false: a pending detach of a window inside the period
  bool drop = false;          // the top-level command's DROP follows in its transaction
  std::string top_level_sql;  // DETACH CONCURRENTLY or FINALIZE, run outside SPI
  bool ran_top_level = false;
  Oid owner = InvalidOid;
  DetachResult result;
};

struct Attempt {
  Oid partition = InvalidOid;
  bool finalize = false;  // of a pending detach
  bool early = false;     // before its back-off ran out: what it gave way to is gone
};

// The whole step: the choice and its SPI part (retire_one), then the
// top-level command it may need, outside SPI. `attempting` names the
// window as soon as it is chosen, for an error to back off;
// `gave_way_to_heal` says a wait ended for a heal request.
void retire_step(Oid relid, BackOffs& back_offs, Step& step, std::optional<Attempt>& attempting,
                 bool* gave_way_to_heal);

}  // namespace partheal::retention
