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

// The caller's memory context and resource owner, which a subtransaction's
// begin and end would otherwise leave changed.
class SubtransactionScope {
 public:
  // With keep_caller_context false the subtransaction's own memory context
  // stays current, so what the work allocates goes with the subtransaction.
  explicit SubtransactionScope(bool keep_caller_context = true)
      : context_(CurrentMemoryContext), owner_(CurrentResourceOwner) {
    guard([&] {
      BeginInternalSubTransaction(nullptr);
      if (keep_caller_context) MemoryContextSwitchTo(context_);
    });
  }
  void roll_back() {
    guard([&] {
      RollbackAndReleaseCurrentSubTransaction();
      restore();
    });
  }
  void release() {
    guard([&] {
      ReleaseCurrentSubTransaction();
      restore();
    });
  }

 private:
  void restore() {
    MemoryContextSwitchTo(context_);
    CurrentResourceOwner = owner_;
  }
  MemoryContext context_;
  ResourceOwner owner_;
};

template <typename F>
void in_subtransaction(F&& body) {
  SubtransactionScope sub;
  try {
    body();
  } catch (...) {
    // The error state was flushed by guard(); rolling back the subtransaction
    // is what makes it safe to go on using this backend.
    sub.roll_back();
    throw;
  }
  try {
    sub.release();
  } catch (...) {
    // A release can fail (a foreign data wrapper's RELEASE SAVEPOINT): the
    // subtransaction is still open, and must not outlive this call.
    sub.roll_back();
    throw;
  }
}

// Runs read-only work in an internal subtransaction that is always rolled
// back: its locks and its memory are released at once, and an error in it is
// thrown after the rollback. For the worker's poll, which reads many tables
// in one transaction and must not hold a lock on each until it ends. What
// the work keeps must live outside PostgreSQL's memory (C++ objects, shared
// memory).
template <typename F>
void in_rolled_back_subtransaction(F&& body) {
  SubtransactionScope sub(false);
  try {
    body();
  } catch (...) {
    sub.roll_back();
    throw;
  }
  sub.roll_back();
}

}  // namespace partheal::pg
