#include <cstring>
#include <optional>

#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "worker/database_ddl.hpp"
#include "worker/databases.hpp"

extern "C" {
#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/syscache.h"
#include "access/htup_details.h"
#include "catalog/pg_database.h"
}

namespace partheal::worker {

namespace {

ProcessUtility_hook_type previous_hook = nullptr;

bool is_template(Oid dboid) {
  HeapTuple tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
  if (!HeapTupleIsValid(tuple)) return false;
  bool result = reinterpret_cast<Form_pg_database>(GETSTRUCT(tuple))->datistemplate;
  ReleaseSysCache(tuple);
  return result;
}

const char* option_string(List* options, const char* name) {
  ListCell* cell;
  foreach (cell, options) {
    auto* def = static_cast<DefElem*>(lfirst(cell));
    if (strcmp(def->defname, name) == 0 && def->arg != nullptr) return defGetString(def);
  }
  return nullptr;
}

// The database whose worker the statement needs gone, when PostgreSQL's
// checks that run before its "being accessed by other users" check let it
// through; nothing otherwise, and the statement fails as it would anyway,
// the worker untouched. Runs in a guard: PostgreSQL calls only.
Oid database_to_pause(Node* node) {
  const char* name = nullptr;
  bool needs_createdb = false;
  bool template_ok_if_marked = false;
  bool no_transaction_block = true;
  switch (nodeTag(node)) {
    case T_DropdbStmt:
      name = castNode(DropdbStmt, node)->dbname;
      break;
    case T_RenameStmt:
      if (castNode(RenameStmt, node)->renameType != OBJECT_DATABASE) return InvalidOid;
      name = castNode(RenameStmt, node)->subname;
      needs_createdb = true;
      no_transaction_block = false;  // RENAME runs in a transaction block
      break;
    case T_AlterDatabaseStmt:
      if (option_string(castNode(AlterDatabaseStmt, node)->options, "tablespace") == nullptr)
        return InvalidOid;
      name = castNode(AlterDatabaseStmt, node)->dbname;
      break;
    case T_CreatedbStmt:
      name = option_string(castNode(CreatedbStmt, node)->options, "template");
      needs_createdb = true;
      template_ok_if_marked = true;
      break;
    default:
      return InvalidOid;
  }
  if (name == nullptr) return InvalidOid;
  if (no_transaction_block && IsTransactionBlock()) return InvalidOid;
  if (needs_createdb && !have_createdb_privilege()) return InvalidOid;
  Oid dboid = get_database_oid(name, true);
  if (dboid == InvalidOid) return InvalidOid;
  // DROP, RENAME and SET TABLESPACE refuse the current database; CREATE
  // DATABASE ... TEMPLATE takes it, counting every other session in it.
  if (dboid == MyDatabaseId && nodeTag(node) != T_CreatedbStmt) return InvalidOid;
  bool owner = pg::compat::owns_database(dboid, GetUserId());
  if (!owner && !(template_ok_if_marked && is_template(dboid))) return InvalidOid;
  return dboid;
}

void run_statement(PlannedStmt* pstmt, const char* query, bool read_only_tree,
                   ProcessUtilityContext context, ParamListInfo params, QueryEnvironment* env,
                   DestReceiver* dest, QueryCompletion* qc) {
  if (previous_hook)
    previous_hook(pstmt, query, read_only_tree, context, params, env, dest, qc);
  else
    standard_ProcessUtility(pstmt, query, read_only_tree, context, params, env, dest, qc);
}

struct Args {
  PlannedStmt* pstmt;
  const char* query;
  bool read_only_tree;
  ProcessUtilityContext context;
  ParamListInfo params;
  QueryEnvironment* env;
  DestReceiver* dest;
  QueryCompletion* qc;
};

void paused_statement(Datum d) {
  auto* a = reinterpret_cast<Args*>(DatumGetPointer(d));
  Oid dboid = pg::guard([&] { return database_to_pause(a->pstmt->utilityStmt); });
  if (dboid == InvalidOid) {
    pg::guard([&] {
      run_statement(a->pstmt, a->query, a->read_only_tree, a->context, a->params, a->env, a->dest,
                    a->qc);
    });
    return;
  }
  try {
    pause_worker(dboid);
    pg::guard([&] {
      run_statement(a->pstmt, a->query, a->read_only_tree, a->context, a->params, a->env, a->dest,
                    a->qc);
    });
  } catch (...) {
    // Failed or cancelled: the database stays, and so does its worker.
    resume_worker(dboid);
    throw;
  }
  // Done: a renamed, moved or copied database gets its worker back. A
  // dropped one stays paused until the drop commits and the launcher
  // forgets it (or this backend exits): a worker started in between would
  // only wait for the drop's lock and fail.
  if (nodeTag(a->pstmt->utilityStmt) != T_DropdbStmt) resume_worker(dboid);
}

void on_utility(PlannedStmt* pstmt, const char* query, bool read_only_tree,
                ProcessUtilityContext context, ParamListInfo params, QueryEnvironment* env,
                DestReceiver* dest, QueryCompletion* qc) {
  // Every other statement passes straight through: no C++ frame, no guard.
  NodeTag tag = nodeTag(pstmt->utilityStmt);
  if (tag != T_DropdbStmt && tag != T_RenameStmt && tag != T_AlterDatabaseStmt &&
      tag != T_CreatedbStmt) {
    run_statement(pstmt, query, read_only_tree, context, params, env, dest, qc);
    return;
  }
  Args args{pstmt, query, read_only_tree, context, params, env, dest, qc};
  pg::enter(paused_statement, PointerGetDatum(&args));
}

}  // namespace

void install_database_ddl_hook() {
  previous_hook = ProcessUtility_hook;
  ProcessUtility_hook = on_utility;
}

}  // namespace partheal::worker
