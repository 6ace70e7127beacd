#include "append/direct_insert.hpp"

#include <vector>

#include "pg/boundary.hpp"
#include "pg/compat.hpp"

extern "C" {
#include "access/sysattr.h"
#include "access/tableam.h"
#include "access/tupconvert.h"
#include "access/xact.h"
#include "catalog/pg_attribute.h"
#include "commands/trigger.h"
#include "utils/snapmgr.h"
#include "miscadmin.h"
#include "executor/execPartition.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/bitmapset.h"
#include "nodes/makefuncs.h"
#include "partitioning/partdesc.h"
#include "utils/rel.h"
}

namespace partheal::append {

namespace {

bool has_insert_row_triggers(const TriggerDesc* t) {
  return t != nullptr &&
         (t->trig_insert_before_row || t->trig_insert_after_row || t->trig_insert_instead_row);
}

bool has_insert_triggers(const TriggerDesc* t) {
  return has_insert_row_triggers(t) ||
         (t != nullptr && (t->trig_insert_before_statement || t->trig_insert_after_statement ||
                           t->trig_insert_new_table));
}

}  // namespace

bool direct_insert_fits(const Target& target, Relation parent, const Rows& rows) {
  if (target.table().shape.citus.in_metadata() || ExecutorCheckPerms_hook != nullptr ||
      parent->rd_rules != nullptr || parent->rd_rel->relrowsecurity || target.has_generated() ||
      has_insert_triggers(parent->trigdesc))
    return false;
  // The INSERT says OVERRIDING SYSTEM VALUE only for a GENERATED ALWAYS id:
  // without it, a row naming another such column is refused by the INSERT.
  if (!target.table().shape.identity_always)
    for (int c : rows.columns)
      if (target.column(c).identity == ATTRIBUTE_IDENTITY_ALWAYS) return false;
  return true;
}

namespace {

// A row's attributes, on the stack for the tables most have.
template <typename T>
class Attributes {
 public:
  Attributes(int n, T fill) {
    if (n > kInline) {
      heap_.assign(n, fill);
      data_ = heap_.data();
    } else {
      for (int i = 0; i < n; ++i) inline_[i] = fill;
    }
  }
  T& operator[](int i) { return data_[i]; }

 private:
  static constexpr int kInline = 64;
  T inline_[kInline];
  std::vector<T> heap_;
  T* data_ = inline_;
};

}  // namespace

bool insert_one_direct(Target& target, Relation parent, Rows& rows, PlannedDefaults& planned) {
  const TupleDesc desc = RelationGetDescr(parent);
  const int natts = desc->natts;
  // Each attribute's value: the row's, or its planned default (nullptr:
  // NULL). Dropped attributes stay NULL. rows.columns is in attnum order,
  // as the target's columns are.
  Attributes<Datum> values(natts, Datum(0));
  Attributes<char> isnull(natts, 1);
  Attributes<Expr*> defaults(natts, nullptr);
  Attributes<int> named(natts, 0);  // the attnums the row names: the INSERT's columns
  int nnamed = 0;
  bool any_default = false;
  size_t p = 0;
  for (int c = 0; c < target.column_count(); ++c) {
    const int a = target.column(c).attnum - 1;
    if (p < rows.columns.size() && rows.columns[p] == c) {
      values[a] = rows.value(static_cast<int>(p), 0);
      isnull[a] = rows.null(static_cast<int>(p), 0) == 'n';
      named[nnamed++] = a + 1;
      ++p;
      continue;
    }
    defaults[a] = planned.get(parent, target.column(c), c);
    any_default = any_default || defaults[a] != nullptr;
  }

  return pg::guard([&] {
    // As an SPI INSERT runs: after what this command did before, under a
    // snapshot of its own that sees it.
    PreventCommandIfParallelMode("INSERT");
    CommandCounterIncrement();
    PushActiveSnapshot(GetTransactionSnapshot());
    UpdateActiveSnapshotCommandId();
    EState* estate = CreateExecutorState();
    estate->es_output_cid = GetCurrentCommandId(true);
    estate->es_snapshot = GetActiveSnapshot();
    MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);

    Bitmapset* inserted = nullptr;
    for (int i = 0; i < nnamed; ++i)
      inserted = bms_add_member(inserted, named[i] - FirstLowInvalidHeapAttributeNumber);
    RangeTblEntry* rte = makeNode(RangeTblEntry);
    rte->rtekind = RTE_RELATION;
    rte->relid = RelationGetRelid(parent);
    rte->relkind = parent->rd_rel->relkind;
    rte->rellockmode = RowExclusiveLock;  // held since open_for_insert
    pg::compat::init_insert_range_table(estate, rte, inserted);
    ResultRelInfo* root = makeNode(ResultRelInfo);
    ExecInitResultRelation(estate, root, 1);
    // What ExecFindPartition reads of a ModifyTable, as COPY FROM sets it.
    ModifyTableState* mtstate = makeNode(ModifyTableState);
    mtstate->ps.plan = nullptr;
    mtstate->ps.state = estate;
    mtstate->operation = CMD_INSERT;
    mtstate->mt_nrels = 1;
    mtstate->resultRelInfo = root;
    mtstate->rootResultRelInfo = root;
    PartitionTupleRouting* proute = ExecSetupPartitionTupleRouting(estate, parent);

    // Routed on the values the row names, the key among them, before any
    // default is evaluated: a partition the direct path does not do is then
    // known before a default (a nextval) runs, which the INSERT runs once.
    // A parent that is a partition itself has its own bounds checked first,
    // and a partition that is partitioned again routes by its own key,
    // either of which may be a column the row leaves to its default: such
    // a table takes its defaults first.
    bool defaults_first = any_default && parent->rd_rel->relispartition;
    if (any_default && !defaults_first) {
      PartitionDesc partitions = RelationGetPartitionDesc(parent, true);
      for (int i = 0; i < partitions->nparts && !defaults_first; ++i)
        defaults_first = !partitions->is_leaf[i];
    }
    TupleTableSlot* slot = ExecInitExtraTupleSlot(estate, desc, &TTSOpsVirtual);
    ExprContext* econtext = any_default ? GetPerTupleExprContext(estate) : nullptr;
    auto fill = [&](bool with_defaults) {
      // Each default's ExprState is built for this call, in its executor
      // state, as each execution of the INSERT builds its own, and all of
      // them before any runs, as there: EXECUTE and a domain's constraints
      // are checked now, before a nextval is drawn.
      ExprState** states = nullptr;
      if (with_defaults) {
        states = static_cast<ExprState**>(palloc0(sizeof(ExprState*) * natts));
        for (int a = 0; a < natts; ++a)
          if (defaults[a] != nullptr) states[a] = ExecInitExpr(defaults[a], nullptr);
      }
      ExecClearTuple(slot);
      for (int a = 0; a < natts; ++a) {
        if (states != nullptr && states[a] != nullptr) {
          slot->tts_values[a] =
              ExecEvalExprSwitchContext(states[a], econtext, &slot->tts_isnull[a]);
        } else {
          slot->tts_values[a] = values[a];
          slot->tts_isnull[a] = isnull[a] != 0;
        }
      }
      ExecStoreVirtualTuple(slot);
    };
    fill(defaults_first);
    ResultRelInfo* leaf = ExecFindPartition(mtstate, root, proute, slot, estate);
    const bool direct = !has_insert_row_triggers(leaf->ri_TrigDesc) &&
                        leaf->ri_FdwRoutine == nullptr &&
                        !pg::compat::has_generated_columns(RelationGetDescr(leaf->ri_RelationDesc));
    if (direct && any_default && !defaults_first) fill(true);
    if (direct) {
      Relation leaf_rel = leaf->ri_RelationDesc;
      TupleConversionMap* map = pg::compat::root_to_child_map(leaf, estate);
      TupleTableSlot* stored =
          map == nullptr ? slot
                         : execute_attr_map_slot(map->attrMap, slot, leaf->ri_PartitionTupleSlot);
      stored->tts_tableOid = RelationGetRelid(leaf_rel);
      // NOT NULL and CHECK; the partition's bounds held when it was routed.
      if (leaf_rel->rd_att->constr != nullptr) ExecConstraints(leaf, stored, estate);
      table_tuple_insert(leaf_rel, stored, estate->es_output_cid, 0, nullptr);
      if (leaf->ri_NumIndices > 0) list_free(pg::compat::insert_index_tuples(leaf, stored, estate));
    }

    // As COPY FROM ends: the slots (which pin their descriptors), the
    // partitions routed to and their indexes, the parent.
    ExecResetTupleTable(estate->es_tupleTable, false);
    ExecCleanupTupleRouting(mtstate, proute);
    ExecCloseResultRelations(estate);
    ExecCloseRangeTableRelations(estate);
    MemoryContextSwitchTo(old);
    FreeExecutorState(estate);
    PopActiveSnapshot();
    if (direct) CommandCounterIncrement();
    return direct;
  });
}

}  // namespace partheal::append
