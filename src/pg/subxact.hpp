// Runs a unit of work in an internal subtransaction, so that its PostgreSQL
// error can be caught and the work retried. Costs an XID only if the work
// writes, so partheal uses it on the slow path alone.
#pragma once

#include "pg/boundary.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/resowner.h"
}

namespace partheal::pg {

template <typename F>
void in_subtransaction(F&& body) {
  MemoryContext context = CurrentMemoryContext;
  ResourceOwner owner = CurrentResourceOwner;
  auto restore = [&] {
    MemoryContextSwitchTo(context);
    CurrentResourceOwner = owner;
  };
  guard([&] {
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(context);
  });
  try {
    body();
  } catch (...) {
    // The error state was flushed by guard(); rolling back the subtransaction
    // is what makes it safe to go on using this backend.
    guard([&] {
      RollbackAndReleaseCurrentSubTransaction();
      restore();
    });
    throw;
  }
  try {
    guard([&] {
      ReleaseCurrentSubTransaction();
      restore();
    });
  } catch (...) {
    // A release can fail (a foreign data wrapper's RELEASE SAVEPOINT): the
    // subtransaction is still open, and must not outlive this call.
    guard([&] {
      RollbackAndReleaseCurrentSubTransaction();
      restore();
    });
    throw;
  }
}

// Runs read-only work in an internal subtransaction that is always rolled
// back: its locks are released at once, and an error in it is thrown after
// the rollback. For the worker's poll, which reads many tables in one
// transaction and must not hold a lock on each until the transaction ends.
template <typename F>
void in_rolled_back_subtransaction(F&& body) {
  MemoryContext context = CurrentMemoryContext;
  ResourceOwner owner = CurrentResourceOwner;
  auto roll_back = [&] {
    guard([&] {
      RollbackAndReleaseCurrentSubTransaction();
      MemoryContextSwitchTo(context);
      CurrentResourceOwner = owner;
    });
  };
  guard([&] {
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(context);
  });
  try {
    body();
  } catch (...) {
    roll_back();
    throw;
  }
  roll_back();
}

}  // namespace partheal::pg
