// What the gate's planner side, executor side and miss handling share.
#pragma once

#include "pg/postgres.hpp"

extern "C" {
#include "nodes/extensible.h"
#include "utils/rel.h"
}

namespace partheal::gate {

// The plan node's name, as EXPLAIN shows it: Custom Scan (PartHealGate).
extern const CustomScanMethods kPlanMethods;

// The gate's executor state, for a plan node of kPlanMethods.
Node* create_gate_state(CustomScan* plan);

// Whether relid, a partitioned table an INSERT targets, is managed: the
// planner's question (registry::registered_for_planning), entered from C.
bool is_managed(Oid relid);

// What handling a row whose key the statement's partitions do not cover did.
enum class Miss {
  kNotOurs,  // not managed any more: the row goes on to PostgreSQL's own error
  kFound,    // the catalog has a partition for it now (attached after the statement began)
  kHealed,   // the heal made it
};

// A row whose key (or NULL: key_null) no partition of the statement's takes,
// and no DEFAULT: its partition is made, as partheal_append would make it,
// with the same policies and errors. `row` numbers the statement's rows
// from 1, for an error's message. Entered from C: a failure is raised as a
// PostgreSQL error.
Miss on_miss(Relation parent, int64 key, bool key_null, int64 row);

// The partitioned table an UPDATE or MERGE writes, as tuple routing's
// errors name it, read before the statement runs (an error handler reads
// no catalog); `registered` false when partheal does not manage it.
struct MoveTarget {
  bool registered;
  NameData schema;
  NameData table;
};
MoveTarget move_target_of(Oid relid);

// An error raised while that UPDATE or MERGE ran: if it is tuple routing's
// miss at the target (a row the UPDATE moves, or MERGE inserts, has no
// partition), raises partheal's own error in its place, which says that
// only INSERTs heal. Returns otherwise, for the caller to raise the error
// as it was. Reads no catalog. Entered from C.
void refuse_unhealed_route(const ErrorData* error, const MoveTarget& target, CmdType operation);

// The executor side: the custom scan's methods and the executor hooks.
void install_executor_side();

}  // namespace partheal::gate
