// The gate's executor side: a plan node under an INSERT's ModifyTable that
// passes every row up unchanged, after making sure the statement can route
// it.
//
// A row's partition key is compared with the range the last row found; a
// row outside it is looked up in the statement's own partition descriptor
// (the one its tuple routing was built from). A key no partition of that
// descriptor takes, with no DEFAULT, is a miss: on_miss() finds the
// partition in the catalog or heals it, and the gate gives the statement a
// fresh partition directory and rebuilds ModifyTable's tuple routing from
// it, so that ModifyTable routes this same row into the new partition. The
// routings and directories replaced stay alive until the gate's own end
// (after ModifyTable's end and the AFTER triggers, which may still use their
// partitions), and are released there.
//
// Only exported executor calls are used (ExecSetupPartitionTupleRouting,
// ExecCleanupTupleRouting, CreatePartitionDirectory through the former,
// PartitionDirectoryLookup, DestroyPartitionDirectory), and public fields
// (ModifyTableState.mt_partition_tuple_routing,
// EState.es_partition_directory). This file holds no C++ object across a
// PostgreSQL call: every function here may be left by PostgreSQL's longjmp.
#include <new>

#include "gate/gate_internal.hpp"
#include "partitions/catalog.hpp"
#include "pg/compat.hpp"
#include "settings.hpp"

extern "C" {
#include "executor/execPartition.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "catalog/pg_class.h"
#include "parser/parsetree.h"
#include "partitioning/partdesc.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
}

namespace partheal::gate {

namespace {

struct GateState {
  CustomScanState css;  // first: PostgreSQL sees a CustomScanState
  // The INSERT above and its table, linked once the executor has started
  // (link_gates); until then, and for an INSERT it cannot serve, the gate
  // only passes rows up.
  ModifyTableState* modify = nullptr;
  Relation parent = nullptr;
  AttrNumber key_attnum = InvalidAttrNumber;
  Oid key_type = InvalidOid;
  PartitionDesc desc = nullptr;  // what the current routing was built from
  // The gate computes a single-row VALUES itself (plan.cpp absorb_result):
  // no source plan, one row from its own projection.
  bool computes_row = false;
  bool row_done = false;
  bool has_last = false;
  partitions::Range last;  // the range the last row routed to
  int64 rows = 0;
  int64 healed = 0;     // partitions the heal made for this statement's rows
  int64 refreshed = 0;  // partitions found in the catalog, attached after the statement began
  List* retired_routings = NIL;
  List* retired_directories = NIL;
};

GateState* gate_of(CustomScanState* node) {
  return reinterpret_cast<GateState*>(node);
}

void begin_gate(CustomScanState* node, EState* estate, int eflags) {
  auto* plan = reinterpret_cast<CustomScan*>(node->ss.ps.plan);
  if (plan->custom_plans == NIL) {
    // ExecInitCustomScan built the projection of the row's target list.
    gate_of(node)->computes_row = true;
    return;
  }
  auto* source = static_cast<Plan*>(linitial(plan->custom_plans));
  node->custom_ps = list_make1(ExecInitNode(source, estate, eflags));
  // The gate returns its source's own slots, of whatever kind the source
  // makes, not the virtual slot ExecInitCustomScan declared.
  node->ss.ps.resultopsset = true;
  node->ss.ps.resultopsfixed = false;
}

// The row a single-row VALUES gives, once, as its Result would.
TupleTableSlot* compute_row(GateState* g) {
  CHECK_FOR_INTERRUPTS();
  if (g->row_done) return nullptr;
  g->row_done = true;
  ExprContext* econtext = g->css.ss.ps.ps_ExprContext;
  ResetExprContext(econtext);
  return ExecProject(g->css.ss.ps.ps_ProjInfo);
}

// The statement sees the catalog as it is now: a new partition directory
// (the old one stays alive for whoever already looked a partition
// descriptor up in it: the source plan's partition pruning) and a new
// routing built from it.
void renew_routing(GateState* g) {
  EState* estate = g->css.ss.ps.state;
  MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
  g->retired_routings = lappend(g->retired_routings, g->modify->mt_partition_tuple_routing);
  g->retired_directories = lappend(g->retired_directories, estate->es_partition_directory);
  estate->es_partition_directory = nullptr;  // ExecSetupPartitionTupleRouting makes a new one
  g->modify->mt_partition_tuple_routing = ExecSetupPartitionTupleRouting(estate, g->parent);
  g->desc = PartitionDirectoryLookup(estate->es_partition_directory, g->parent);
  g->has_last = false;
  MemoryContextSwitchTo(old);
}

// A row outside the last row's range. Returns once the statement's routing
// has a partition (or a DEFAULT) for it, or when the gate is off or the
// table no longer managed (PostgreSQL's own error follows). Bounded: each
// round is a heal or a refresh, and the heal loop itself gives up with
// PH001 past partheal.max_retries.
void check_row(GateState* g, Datum value, bool isnull) {
  const int64 key = isnull ? 0 : partitions::key_to_int64(value, g->key_type);
  for (int round = 0; round <= 1 + settings::max_retries; ++round) {
    partitions::DescriptorRoute route =
        partitions::route_in_descriptor(g->desc, g->key_type, key, isnull);
    if (route.to == partitions::DescriptorRoute::To::kPartition) {
      g->last = route.range;
      g->has_last = true;
      return;
    }
    // A DEFAULT takes the row (the worker's drain moves it later): the gate
    // never makes a window under a statement that holds the DEFAULT.
    if (route.to == partitions::DescriptorRoute::To::kDefault) return;
    if (!settings::heal_inserts) return;
    Miss miss = on_miss(g->parent, key, isnull, g->rows);
    if (miss == Miss::kNotOurs) return;
    if (miss == Miss::kHealed)
      ++g->healed;
    else
      ++g->refreshed;
    renew_routing(g);
  }
}

TupleTableSlot* exec_gate(CustomScanState* node) {
  GateState* g = gate_of(node);
  TupleTableSlot* slot = g->computes_row
                             ? compute_row(g)
                             : ExecProcNode(static_cast<PlanState*>(linitial(node->custom_ps)));
  if (TupIsNull(slot) || g->modify == nullptr) return slot;
  ++g->rows;
  bool isnull = false;
  Datum value = slot_getattr(slot, g->key_attnum, &isnull);
  // The fast path: the row goes where the last one went.
  if (!isnull && g->has_last &&
      partitions::contains(g->last, partitions::key_to_int64(value, g->key_type)))
    return slot;
  check_row(g, value, isnull);
  return slot;
}

void end_gate(CustomScanState* node) {
  GateState* g = gate_of(node);
  if (node->custom_ps != NIL) ExecEndNode(static_cast<PlanState*>(linitial(node->custom_ps)));
  // ModifyTable has cleaned up the routing it used last; the ones replaced
  // before it are the gate's to clean up, then their directories.
  for (int i = 0; i < list_length(g->retired_routings); ++i)
    ExecCleanupTupleRouting(g->modify,
                            static_cast<PartitionTupleRouting*>(list_nth(g->retired_routings, i)));
  for (int i = 0; i < list_length(g->retired_directories); ++i)
    if (list_nth(g->retired_directories, i) != nullptr)
      DestroyPartitionDirectory(
          static_cast<PartitionDirectory>(list_nth(g->retired_directories, i)));
  g->retired_routings = NIL;
  g->retired_directories = NIL;
}

void rescan_gate(CustomScanState* node) {
  gate_of(node)->row_done = false;
  if (node->custom_ps != NIL) ExecReScan(static_cast<PlanState*>(linitial(node->custom_ps)));
}

void explain_gate(CustomScanState* node, List*, ExplainState* es) {
  GateState* g = gate_of(node);
  if (!es->analyze) return;
  ExplainPropertyInteger("Partitions Healed", nullptr, g->healed, es);
  if (g->refreshed > 0) ExplainPropertyInteger("Partitions Found", nullptr, g->refreshed, es);
}

CustomExecMethods make_exec_methods() {
  CustomExecMethods m{};
  m.CustomName = "PartHealGate";
  m.BeginCustomScan = begin_gate;
  m.ExecCustomScan = exec_gate;
  m.EndCustomScan = end_gate;
  m.ReScanCustomScan = rescan_gate;
  m.ExplainCustomScan = explain_gate;
  return m;
}

const CustomExecMethods kExecMethods = make_exec_methods();

// The gate learns its ModifyTable once the executor has started: a plan
// state does not know its parent, and ModifyTable builds its routing after
// its source's state.
void link_gate(EState* estate, PlanState* above) {
  if (above == nullptr || !IsA(above, ModifyTableState)) return;
  PlanState* below = outerPlanState(above);
  if (below == nullptr || !IsA(below, CustomScanState) ||
      reinterpret_cast<CustomScanState*>(below)->methods != &kExecMethods)
    return;
  auto* modify = reinterpret_cast<ModifyTableState*>(above);
  GateState* g = gate_of(reinterpret_cast<CustomScanState*>(below));
  if (modify->mt_partition_tuple_routing == nullptr || estate->es_partition_directory == nullptr)
    return;
  Relation parent = modify->rootResultRelInfo->ri_RelationDesc;
  PartitionKey key = RelationGetPartitionKey(parent);
  // partheal manages tables partitioned by RANGE on one column; a key that
  // became anything else is PostgreSQL's to route.
  if (key == nullptr || key->partnatts != 1 || key->partattrs[0] == InvalidAttrNumber) return;
  g->modify = modify;
  g->parent = parent;
  g->key_attnum = key->partattrs[0];
  g->key_type = key->parttypid[0];
  g->desc = PartitionDirectoryLookup(estate->es_partition_directory, parent);
}

ExecutorStart_hook_type previous_executor_start = nullptr;

void start_executor(QueryDesc* query, int eflags) {
  if (previous_executor_start != nullptr)
    previous_executor_start(query, eflags);
  else
    standard_ExecutorStart(query, eflags);
  if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0 || query->planstate == nullptr) return;
  EState* estate = query->estate;
  link_gate(estate, query->planstate);
  for (int i = 0; i < list_length(estate->es_subplanstates); ++i)
    link_gate(estate, static_cast<PlanState*>(list_nth(estate->es_subplanstates, i)));
}

ExecutorRun_hook_type previous_executor_run = nullptr;

// The partitioned table an UPDATE or MERGE writes, whose routing misses get
// partheal's error (refuse_unhealed_route); InvalidOid for anything else.
Oid moving_target(const QueryDesc* query) {
  const PlannedStmt* stmt = query->plannedstmt;
  if (stmt == nullptr || (stmt->commandType != CMD_UPDATE && stmt->commandType != CMD_MERGE) ||
      stmt->planTree == nullptr || !IsA(stmt->planTree, ModifyTable))
    return InvalidOid;
  auto* modify = reinterpret_cast<const ModifyTable*>(stmt->planTree);
  Index rti = modify->rootRelation > 0 ? modify->rootRelation : modify->nominalRelation;
  if (rti == 0) return InvalidOid;
  RangeTblEntry* rte = rt_fetch(rti, stmt->rtable);
  return rte->relkind == RELKIND_PARTITIONED_TABLE ? rte->relid : InvalidOid;
}

void run_standard(PARTHEAL_EXECUTOR_RUN_PARAMS) {
  if (previous_executor_run != nullptr)
    previous_executor_run(PARTHEAL_EXECUTOR_RUN_ARGS);
  else
    standard_ExecutorRun(PARTHEAL_EXECUTOR_RUN_ARGS);
}

void run_executor(PARTHEAL_EXECUTOR_RUN_PARAMS) {
  const Oid relid = moving_target(query);
  if (relid == InvalidOid) {
    run_standard(PARTHEAL_EXECUTOR_RUN_ARGS);
    return;
  }
  // Read before it runs: the error handler below reads no catalog.
  const MoveTarget target = move_target_of(relid);
  if (!target.registered) {
    run_standard(PARTHEAL_EXECUTOR_RUN_ARGS);
    return;
  }
  MemoryContext context = CurrentMemoryContext;
  PG_TRY();
  { run_standard(PARTHEAL_EXECUTOR_RUN_ARGS); }
  PG_CATCH();
  {
    // Read the error, then either raise partheal's in its place or raise it
    // again as it was.
    MemoryContext error_context = MemoryContextSwitchTo(context);
    ErrorData* error = CopyErrorData();
    MemoryContextSwitchTo(error_context);
    if (error->sqlerrcode == ERRCODE_CHECK_VIOLATION) {
      FlushErrorState();
      refuse_unhealed_route(error, target, query->plannedstmt->commandType);
      ReThrowError(error);
    }
    FreeErrorData(error);
    PG_RE_THROW();
  }
  PG_END_TRY();
}

}  // namespace

Node* create_gate_state(CustomScan*) {
  void* memory = palloc0(sizeof(GateState));
  auto* g = new (memory) GateState();
  NodeSetTag(&g->css, T_CustomScanState);
  g->css.methods = &kExecMethods;
  return reinterpret_cast<Node*>(g);
}

void install_executor_side() {
  previous_executor_start = ExecutorStart_hook;
  ExecutorStart_hook = start_executor;
  previous_executor_run = ExecutorRun_hook;
  ExecutorRun_hook = run_executor;
}

}  // namespace partheal::gate
