// The gate's planner side: after the standard planner, every INSERT into a
// managed table gets the gate between it and the plan of its rows.
//
// This file holds no C++ object with a destructor across a PostgreSQL call:
// the planner hook and everything it calls may be left by PostgreSQL's
// longjmp. The one C++
// question, whether a table is managed, is asked through is_managed().
#include <algorithm>

#include "gate/gate.hpp"
#include "gate/gate_internal.hpp"
#include "pg/compat.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
}

namespace partheal::gate {

namespace {

planner_hook_type previous_planner = nullptr;

}  // namespace

const CustomScanMethods kPlanMethods = {"PartHealGate", create_gate_state};

namespace {

// The gate passes its source's rows up as they are: its output is the
// source's, column for column. Each column refers to the source's output
// (INDEX_VAR into custom_scan_tlist, which names it as the target table's
// column, so that EXPLAIN VERBOSE shows "q.id"); so the output matches the
// scan tuple and the executor builds no projection for the node. Only a
// dropped or a generated column keeps its NULL constant: ModifyTable
// checks that it gets one (ExecCheckPlanOutput).
Plan* make_gate(Plan* source, Index target_rti, Relation target, int plan_node_id) {
  CustomScan* gate = makeNode(CustomScan);
  gate->methods = &kPlanMethods;
  gate->custom_plans = list_make1(source);
  gate->scan.scanrelid = 0;
  Plan* plan = &gate->scan.plan;
  plan->startup_cost = source->startup_cost;
  plan->total_cost = source->total_cost;
  plan->plan_rows = source->plan_rows;
  plan->plan_width = source->plan_width;
  pg::compat::copy_disabled_nodes(plan, source);
  plan->parallel_aware = false;
  plan->parallel_safe = false;
  plan->plan_node_id = plan_node_id;
  List* output = NIL;
  List* source_columns = NIL;
  for (int i = 0; i < list_length(source->targetlist); ++i) {
    auto* tle = static_cast<TargetEntry*>(list_nth(source->targetlist, i));
    Expr* mine = nullptr;
    Expr* named = nullptr;
    // ModifyTable wants a NULL constant for a dropped or a generated column.
    const bool must_be_null =
        tle->resno >= 1 && tle->resno <= RelationGetDescr(target)->natts &&
        (TupleDescAttr(RelationGetDescr(target), tle->resno - 1)->attisdropped ||
         TupleDescAttr(RelationGetDescr(target), tle->resno - 1)->attgenerated != '\0');
    if (must_be_null && IsA(tle->expr, Const)) {
      mine = static_cast<Expr*>(copyObjectImpl(tle->expr));
      named = static_cast<Expr*>(copyObjectImpl(tle->expr));
    } else {
      Node* e = reinterpret_cast<Node*>(tle->expr);
      mine = reinterpret_cast<Expr*>(
          makeVar(INDEX_VAR, tle->resno, exprType(e), exprTypmod(e), exprCollation(e), 0));
      named = reinterpret_cast<Expr*>(
          makeVar(target_rti, tle->resno, exprType(e), exprTypmod(e), exprCollation(e), 0));
    }
    output = lappend(output, makeTargetEntry(mine, tle->resno, tle->resname, tle->resjunk));
    source_columns =
        lappend(source_columns, makeTargetEntry(named, tle->resno, tle->resname, tle->resjunk));
  }
  plan->targetlist = output;
  gate->custom_scan_tlist = source_columns;
  return plan;
}

// The highest plan_node_id under plan: set_plan_references numbers the
// nodes of the whole statement, subplans included, each once, and a gate
// takes a number after all of them.
int highest_node_id(const Plan* plan) {
  if (plan == nullptr) return -1;
  int top = plan->plan_node_id;
  auto visit = [&top](const void* child) {
    top = std::max(top, highest_node_id(static_cast<const Plan*>(child)));
  };
  auto visit_all = [&visit](const List* children) {
    for (int i = 0; i < list_length(children); ++i) visit(list_nth(children, i));
  };
  visit(plan->lefttree);
  visit(plan->righttree);
  switch (nodeTag(plan)) {
    case T_Append:
      visit_all(reinterpret_cast<const Append*>(plan)->appendplans);
      break;
    case T_MergeAppend:
      visit_all(reinterpret_cast<const MergeAppend*>(plan)->mergeplans);
      break;
    case T_BitmapAnd:
      visit_all(reinterpret_cast<const BitmapAnd*>(plan)->bitmapplans);
      break;
    case T_BitmapOr:
      visit_all(reinterpret_cast<const BitmapOr*>(plan)->bitmapplans);
      break;
    case T_SubqueryScan:
      visit(reinterpret_cast<const SubqueryScan*>(plan)->subplan);
      break;
    case T_CustomScan:
      visit_all(reinterpret_cast<const CustomScan*>(plan)->custom_plans);
      break;
    default:
      break;
  }
  return top;
}

int highest_node_id(const PlannedStmt* stmt) {
  int top = highest_node_id(stmt->planTree);
  for (int i = 0; i < list_length(stmt->subplans); ++i)
    top = std::max(top, highest_node_id(static_cast<const Plan*>(list_nth(stmt->subplans, i))));
  return top;
}

// A single-row VALUES (the commonest INSERT) is planned as a Result with
// no input, no qual and no one-time filter: it only computes its target
// list once. The gate takes that target list itself and computes it, in
// the Result's place, so that such an INSERT runs one plan node, not two,
// as without partheal: the gate's own start-up then costs what the
// Result's did.
bool absorbable(const Plan* source) {
  return IsA(source, Result) && source->lefttree == nullptr && source->righttree == nullptr &&
         source->qual == NIL && reinterpret_cast<const Result*>(source)->resconstantqual == nullptr;
}

Plan* absorb_result(Plan* source, int plan_node_id) {
  CustomScan* gate = makeNode(CustomScan);
  gate->methods = &kPlanMethods;
  gate->custom_plans = NIL;  // none: the gate computes the row (node.cpp)
  gate->scan.scanrelid = 0;
  Plan* plan = &gate->scan.plan;
  plan->startup_cost = source->startup_cost;
  plan->total_cost = source->total_cost;
  plan->plan_rows = source->plan_rows;
  plan->plan_width = source->plan_width;
  pg::compat::copy_disabled_nodes(plan, source);
  plan->parallel_aware = false;
  plan->parallel_safe = false;
  plan->plan_node_id = plan_node_id;
  // The Result's row, as it was: its constants for dropped and generated
  // columns among it. Its init plans and parameters come along.
  plan->targetlist = source->targetlist;
  plan->initPlan = source->initPlan;
  plan->extParam = source->extParam;
  plan->allParam = source->allParam;
  return plan;
}

// An INSERT's ModifyTable into a managed partitioned table gets the gate.
// ModifyTable sits at the top of its query level: the statement's own plan
// and each data-modifying CTE's. `next_id` is the plan_node_id the next
// gate takes (-1: not counted yet).
void gate_insert(PlannedStmt* stmt, Plan* plan, int* next_id) {
  if (plan == nullptr || !IsA(plan, ModifyTable)) return;
  auto* modify = reinterpret_cast<ModifyTable*>(plan);
  if (modify->operation != CMD_INSERT || list_length(modify->resultRelations) != 1) return;
  Plan* source = outerPlan(plan);
  if (source == nullptr) return;
  if (IsA(source, CustomScan) && reinterpret_cast<CustomScan*>(source)->methods == &kPlanMethods)
    return;
  Index rti = static_cast<Index>(linitial_int(modify->resultRelations));
  RangeTblEntry* rte = rt_fetch(rti, stmt->rtable);
  if (rte->relkind != RELKIND_PARTITIONED_TABLE || !is_managed(rte->relid)) return;
  if (*next_id < 0) *next_id = highest_node_id(stmt) + 1;
  if (absorbable(source)) {
    outerPlan(plan) = absorb_result(source, (*next_id)++);
    return;
  }
  Relation target = relation_open(rte->relid, NoLock);  // the query holds its lock
  outerPlan(plan) = make_gate(source, rti, target, (*next_id)++);
  relation_close(target, NoLock);
}

PlannedStmt* plan_with_gate(PARTHEAL_PLANNER_PARAMS) {
  PlannedStmt* stmt = previous_planner != nullptr ? previous_planner(PARTHEAL_PLANNER_ARGS)
                                                  : standard_planner(PARTHEAL_PLANNER_ARGS);
  // The gate is planned whatever partheal.heal_inserts says: the setting is
  // read when a row misses, so a plan cached under one value obeys another.
  if (stmt->commandType == CMD_INSERT || stmt->hasModifyingCTE) {
    int next_id = -1;
    gate_insert(stmt, stmt->planTree, &next_id);
    for (int i = 0; i < list_length(stmt->subplans); ++i)
      gate_insert(stmt, static_cast<Plan*>(list_nth(stmt->subplans, i)), &next_id);
  }
  return stmt;
}

}  // namespace

void install() {
  RegisterCustomScanMethods(&kPlanMethods);
  previous_planner = planner_hook;
  planner_hook = plan_with_gate;
  install_executor_side();
}

}  // namespace partheal::gate
