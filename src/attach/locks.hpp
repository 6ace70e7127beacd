// The attach's lock discipline, which retention's detach shares: every lock
// polled in short tries within one budget kept below deadlock_timeout, so
// that partheal is the one that gives way, and only the last attempt
// queues, in slices, so that a writer waits behind it for one slice at
// most.
#pragma once

#include <utility>
#include <vector>

#include "attach/window.hpp"
#include "pg/error.hpp"
#include "pg/postgres.hpp"

extern "C" {
#include "storage/lockdefs.h"
#include "utils/timestamp.h"
}

namespace partheal::attach::locks {

// The budget of an attempt's lock waits (see locks.cpp), set at the start of
// each attach or detach.
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

// A lock wait that ran out, or a deadlock partheal gave way in.
bool is_lock_wait(const PgError& e);

}  // namespace partheal::attach::locks
