// partheal_unmanage's forgetting of a table's shared state, held until its
// transaction commits.
#include "manage/forget_internal.hpp"

#include <iterator>
#include <vector>

#include "pg/boundary.hpp"
#include "registry/registry.hpp"
#include "registry/table_state.hpp"

extern "C" {
#include "access/xact.h"
}

namespace partheal::manage {

namespace {

// partheal_unmanage's shared state goes when its transaction commits: a
// ROLLBACK keeps the registration, so it must keep the stats and the
// watermark too. Each entry remembers the subtransaction level it was made
// at, so a rolled-back savepoint takes its own entries back.
struct PendingForget {
  Oid relid;
  int level;
};

std::vector<PendingForget>& pending_forgets() {
  static auto* pending = new std::vector<PendingForget>();
  return *pending;
}

void on_xact(XactEvent event, void*) noexcept {
  auto& pending = pending_forgets();
  if (event == XACT_EVENT_COMMIT) {
    for (const PendingForget& p : pending) {
      try {
        registry::forget(p.relid);
      } catch (...) {
        // Left for the worker's next poll, which forgets unregistered tables.
      }
    }
  }
  // A prepared transaction commits or rolls back elsewhere, later: its
  // forgets are left to the worker's poll, which forgets unregistered tables.
  if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE)
    pending.clear();
}

void on_subxact(SubXactEvent event, SubTransactionId, SubTransactionId, void*) noexcept {
  auto& pending = pending_forgets();
  int level = GetCurrentTransactionNestLevel();
  for (auto it = pending.begin(); it != pending.end();) {
    if (it->level < level) {
      ++it;
    } else if (event == SUBXACT_EVENT_ABORT_SUB) {
      it = pending.erase(it);
    } else {
      if (event == SUBXACT_EVENT_COMMIT_SUB) it->level = level - 1;
      ++it;
    }
  }
}

}  // namespace

// A state whose table is no longer registered (a race with the worker's
// poll during partheal_unmanage can leave one) is forgotten, so the space
// goes back to tables that are.
void forget_unregistered() {
  registry::forget_all_but(registry::registered_tables());
}

void forget_at_commit(Oid relid) {
  static bool registered = false;
  if (!registered) {
    pg::guard([] {
      RegisterXactCallback(on_xact, nullptr);
      RegisterSubXactCallback(on_subxact, nullptr);
    });
    registered = true;
  }
  pending_forgets().push_back(PendingForget{relid, GetCurrentTransactionNestLevel()});
}

// Registered again in the same transaction: its state stays.
void cancel_forget(Oid relid) {
  auto& pending = pending_forgets();
  for (auto it = pending.begin(); it != pending.end();)
    it = it->relid == relid ? pending.erase(it) : std::next(it);
}

}  // namespace partheal::manage
