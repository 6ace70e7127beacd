// Inside attach_window (attach/reconcile.hpp), for attach/ only: what its
// pieces share. reconcile.cpp is the call itself; locks.cpp the lock budget
// and the lock polling; move.cpp the moves out of DEFAULT and the looks that
// decide whether rows may move; attempt.cpp the attempt loop.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attach/reconcile.hpp"
#include "attach/window.hpp"

extern "C" {
#include "storage/lockdefs.h"
#include "utils/timestamp.h"
}

namespace partheal::attach::reconcile {

// Thrown inside the attach's subtransaction to roll back everything it did
// (a table it created, rows it moved) and report default_holds_rows.
struct GiveUp {
  std::string reason;
  std::string hint;  // what the caller can do about it
};

enum class Try { kAttached, kDefaultConflict };

struct Names {
  std::string parent;      // schema.name, quoted
  std::string table;       // the window's table, schema.name, quoted
  std::string table_name;  // unqualified, as it is
  std::string range;       // FROM (...) TO (...)
};

// locks.cpp

// The budget of an attempt's lock waits (see locks.cpp), set at the start of
// each attach_window.
int lock_budget_ms();
void set_lock_budget_ms(int ms);

class LockBudget {
 public:
  explicit LockBudget(TimestampTz started) : started_(started) {}
  long left() const;
  // lock_timeout for the next wait: one slice, or what is left if less.
  void apply() const;

 private:
  TimestampTz started_;
};

// Thrown inside an attempt when a lock it polls for is taken: the attempt's
// subtransaction rolls back, releasing the locks it did get.
struct LocksBusy {};

using LockSet = std::vector<std::pair<Oid, LOCKMODE>>;
LockSet attach_lock_set(const Parent& p, Oid table, bool locked);
LockSet detach_lock_set(const Parent& p, Oid partition);
LockSet parent_and_default_lock_set(const Parent& p);
// held_since: when the parent was had, with a DEFAULT (writers wait then).
void lock_all(const Parent& p, const LockSet& set, bool wait, const LockBudget& budget,
              TimestampTz& held_since);
bool someone_waits_for_me();

// move.cpp

int64 move_rows(const Parent& p, const Window& w, const Names& n, int64 batch_rows, Result& r);
bool default_holds_window_rows(const Parent& p, const Window& w);
int64 move_skipped(const Parent& p, const Window& w, const Names& n, Result& r);
bool referenced_by_foreign_keys(const Parent& p);
bool published(const Parent& p);

// attempt.cpp

bool is_lock_wait(const PgError& e);
Try attempt(const Parent& p, const Window& w, const Names& n, Oid table, bool locked, Result& r);

}  // namespace partheal::attach::reconcile
