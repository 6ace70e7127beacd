#include "manage/drop_extension.hpp"

#include <cstring>

#include "manage/id_default_internal.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "commands/extension.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
}

namespace partheal::manage {

namespace {

ProcessUtility_hook_type previous_hook = nullptr;

// DROP EXTENSION naming partheal, whatever else it names. Plain C on the
// parse tree: nothing here can fail.
bool drops_partheal(Node* stmt) {
  if (!IsA(stmt, DropStmt)) return false;
  auto* drop = castNode(DropStmt, stmt);
  if (drop->removeType != OBJECT_EXTENSION) return false;
  ListCell* cell;
  foreach (cell, drop->objects) {
    if (strcmp(strVal(lfirst(cell)), "partheal") == 0) return true;
  }
  return false;
}

// With the extension gone already (IF EXISTS), there is nothing to put back.
void restore_before_drop(Datum) {
  if (!pg::guard([] { return OidIsValid(get_extension_oid("partheal", true)); })) return;
  restore_every_nextval();
}

void on_utility(PlannedStmt* pstmt, const char* query, bool read_only_tree,
                ProcessUtilityContext context, ParamListInfo params, QueryEnvironment* env,
                DestReceiver* dest, QueryCompletion* qc) {
  if (drops_partheal(pstmt->utilityStmt)) pg::enter(restore_before_drop, 0);
  // The drop itself runs with no C++ frame of partheal's below it.
  if (previous_hook)
    previous_hook(pstmt, query, read_only_tree, context, params, env, dest, qc);
  else
    standard_ProcessUtility(pstmt, query, read_only_tree, context, params, env, dest, qc);
}

}  // namespace

void install_drop_extension_hook() {
  previous_hook = ProcessUtility_hook;
  ProcessUtility_hook = on_utility;
}

}  // namespace partheal::manage
