// Every difference between the PostgreSQL majors partheal builds against,
// and the only file that tests PG_VERSION_NUM. 15, 17 and 18 are built and
// tested; 19 is compiled against its headers; 16 is written in
// where it costs nothing (it sits between 15 and 17 on every point below)
// but never built here.
#pragma once

#include "pg/postgres.hpp"

extern "C" {
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/guc.h"  // 17+: no longer comes in through executor/spi.h
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/wait_event.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "nodes/execnodes.h"
#include "nodes/parsenodes.h"
#include "nodes/extensible.h"
#include "optimizer/planner.h"
#if PG_VERSION_NUM >= 160000
#include "parser/parse_relation.h"  // addRTEPermissionInfo
#endif
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"  // ExplainProperty*, out of explain.h in 18
#include "commands/explain_state.h"
#else
#include "commands/explain.h"
#endif
#if PG_VERSION_NUM >= 190000
#include "utils/lsyscache.h"  // get_database_name, moved from dbcommands.h in 19
#else
#include "commands/dbcommands.h"
#endif
}

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 200000
#error "partheal supports PostgreSQL 15 to 19"
#endif

namespace partheal::pg::compat {

// Ownership: 16 replaced pg_class_ownercheck and pg_database_ownercheck by
// object_ownercheck on the catalog's oid.
inline bool owns_relation(Oid relid, Oid role) {
#if PG_VERSION_NUM >= 160000
  return object_ownercheck(RelationRelationId, relid, role);
#else
  return pg_class_ownercheck(relid, role);
#endif
}

inline bool owns_database(Oid dboid, Oid role) {
#if PG_VERSION_NUM >= 160000
  return object_ownercheck(DatabaseRelationId, dboid, role);
#else
  return pg_database_ownercheck(dboid, role);
#endif
}

// This backend's index among the MaxBackends regular backends, from 0: 15
// and 16 number backends from 1 (MyBackendId), 17 from 0 (MyProcNumber,
// whose first MaxBackends entries are the regular backends and workers).
inline int backend_index() {
#if PG_VERSION_NUM >= 170000
  return MyProcNumber;
#else
  return MyBackendId - 1;
#endif
}

// Whether this transaction holds exactly `mode` on the lock: 17 added the
// `orstronger` argument, which partheal leaves off ("stronger" is not
// "conflicting", which is what it asks about mode by mode).
inline bool lock_held_by_me(const LOCKTAG* tag, LOCKMODE mode) {
#if PG_VERSION_NUM >= 170000
  return LockHeldByMe(tag, mode, false);
#else
  return LockHeldByMe(tag, mode);
#endif
}

// A fixed-size shared hash table of `entries` entries: 19 dropped the
// separate initial and maximum sizes.
inline HTAB* shmem_init_fixed_hash(const char* name, long entries, HASHCTL* info, int flags) {
#if PG_VERSION_NUM >= 190000
  return ShmemInitHash(name, entries, info, flags | HASH_FIXED_SIZE);
#else
  return ShmemInitHash(name, entries, entries, info, flags | HASH_FIXED_SIZE);
#endif
}

// The cache id a syscache callback gets: an enum from 19, an int before.
#if PG_VERSION_NUM >= 190000
using SyscacheId = SysCacheIdentifier;
#else
using SyscacheId = int;
#endif

// A wait event of partheal's own, as pg_stat_activity shows it: 17 lets an
// extension name its waits (wait_event_type "Extension", wait_event the
// name); before 17 every one of them is plain "Extension". Registered once
// per process, so call it where waits begin, not at load time.
inline uint32 wait_event(const char* name) {
#if PG_VERSION_NUM >= 170000
  return WaitEventExtensionNew(name);
#else
  (void)name;
  return PG_WAIT_EXTENSION;
#endif
}

// After wait_event raised an error: WaitEventExtensionNew raises "too many
// custom wait events" (a cluster-wide limit shared by every extension) while
// it holds WaitEventCustomLock exclusively, and outside a transaction nothing
// would release it.
inline void release_wait_event_lock() {
#if PG_VERSION_NUM >= 170000
  if (LWLockHeldByMe(WaitEventCustomLock)) LWLockRelease(WaitEventCustomLock);
#endif
}

// The executor calls of a direct insert (append/direct_insert), as COPY
// FROM makes them.
//
// The range table of one INSERT into `rte`, with `inserted` (attnums offset
// by FirstLowInvalidHeapAttributeNumber) as its inserted columns, which an
// error's "Failing row contains" consults: 16 moved the permissions into
// RTEPermissionInfo, 18 added the unpruned relids.
inline void init_insert_range_table(EState* estate, RangeTblEntry* rte, Bitmapset* inserted) {
#if PG_VERSION_NUM >= 160000
  List* perminfos = NIL;
  RTEPermissionInfo* perm = addRTEPermissionInfo(&perminfos, rte);
  perm->requiredPerms = ACL_INSERT;
  perm->insertedCols = inserted;
#if PG_VERSION_NUM >= 180000
  ExecInitRangeTable(estate, list_make1(rte), perminfos, bms_make_singleton(1));
#else
  ExecInitRangeTable(estate, list_make1(rte), perminfos);
#endif
#else
  rte->requiredPerms = ACL_INSERT;
  rte->insertedCols = inserted;
  ExecInitRangeTable(estate, list_make1(rte));
#endif
}

// The map from the root's row type to a leaf's, nullptr when they match:
// 16 builds it on demand.
inline TupleConversionMap* root_to_child_map(ResultRelInfo* leaf, EState* estate) {
#if PG_VERSION_NUM >= 160000
  return ExecGetRootToChildMap(leaf, estate);
#else
  (void)estate;
  return leaf->ri_RootToPartitionMap;
#endif
}

// A new row's index entries, unique ones checked at once: 16 added
// onlySummarizing, 19 folded the flags into one argument.
inline List* insert_index_tuples(ResultRelInfo* leaf, TupleTableSlot* slot, EState* estate) {
#if PG_VERSION_NUM >= 190000
  return ExecInsertIndexTuples(leaf, estate, 0, slot, NIL, nullptr);
#elif PG_VERSION_NUM >= 160000
  return ExecInsertIndexTuples(leaf, slot, estate, false, false, nullptr, NIL, false);
#else
  return ExecInsertIndexTuples(leaf, slot, estate, false, false, nullptr, NIL);
#endif
}

// Whether a relation has generated columns: 18 added virtual ones.
inline bool has_generated_columns(TupleDesc desc) {
  if (desc->constr == nullptr) return false;
#if PG_VERSION_NUM >= 180000
  return desc->constr->has_generated_stored || desc->constr->has_generated_virtual;
#else
  return desc->constr->has_generated_stored;
#endif
}

// A column of a heap tuple, by the server's own code. heap_getattr is
// inline, and a later minor release's headers can inline a call that an
// earlier server of the same major does not export: Debian's 17.12 headers
// call heap_datum_check, which upstream 17.10 lacks, and a library that
// inlined it would not load there. SPI_getbinval is heap_getattr behind an
// exported symbol (with no SPI connection needed); a column number past the
// descriptor reads as NULL.
inline Datum getattr(HeapTuple tuple, int attnum, TupleDesc desc, bool* isnull) {
  return SPI_getbinval(tuple, desc, attnum, isnull);
}

// The planner hook's parameters, for a hook that passes them on: 19 added
// the EXPLAIN state of an EXPLAIN being planned.
#if PG_VERSION_NUM >= 190000
#define PARTHEAL_PLANNER_PARAMS                                                     \
  Query *parse, const char *query_string, int cursor_options, ParamListInfo params, \
      ExplainState *explain_state
#define PARTHEAL_PLANNER_ARGS parse, query_string, cursor_options, params, explain_state
#else
#define PARTHEAL_PLANNER_PARAMS \
  Query *parse, const char *query_string, int cursor_options, ParamListInfo params
#define PARTHEAL_PLANNER_ARGS parse, query_string, cursor_options, params
#endif

// A plan node put over another takes its count of disabled nodes (18
// counts them per node, and EXPLAIN says "Disabled" where a node has more
// than its children).
inline void copy_disabled_nodes(Plan* to, const Plan* from) {
#if PG_VERSION_NUM >= 180000
  to->disabled_nodes = from->disabled_nodes;
#else
  (void)to;
  (void)from;
#endif
}

// The ExecutorRun hook's parameters: 18 dropped execute_once.
#if PG_VERSION_NUM >= 180000
#define PARTHEAL_EXECUTOR_RUN_PARAMS QueryDesc *query, ScanDirection direction, uint64 count
#define PARTHEAL_EXECUTOR_RUN_ARGS query, direction, count
#else
#define PARTHEAL_EXECUTOR_RUN_PARAMS \
  QueryDesc *query, ScanDirection direction, uint64 count, bool execute_once
#define PARTHEAL_EXECUTOR_RUN_ARGS query, direction, count, execute_once
#endif

// PostgreSQL's private layouts partheal mirrors.
//
// BackgroundWorkerHandle: bgworker.h declares it, only bgworker.c defines
// it, as { int slot; uint64 generation; } in every major from 15 to 19.
// partheal keeps handles by value in shared memory, so it needs the bytes.
// No major's headers define it, so nothing here can compare the copy with
// PostgreSQL's; make test does, field by field, against the struct cut from
// the source of the server it tests (15 and 18:
// test/unit/private_layout_test.cpp). The assertion below only pins the copy
// itself, so that an edit to it cannot pass unnoticed on 17 and 19.
struct BackgroundWorkerHandleCopy {
  int slot;
  uint64 generation;
};
static_assert(sizeof(BackgroundWorkerHandleCopy) == 16 && alignof(BackgroundWorkerHandleCopy) == 8,
              "BackgroundWorkerHandle is { int slot; uint64 generation; } in PostgreSQL 15 to 19");

}  // namespace partheal::pg::compat
