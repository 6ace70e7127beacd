// Cancelling a lock wait when something more urgent turns up: while a
// CancelWhen lives, a timer asks `wanted` every 5 ms while the process
// sleeps on a lock and, when it says yes, cancels the command as a cancel
// request would. The lock wait then ends at once with 57014 ("canceling
// statement due to user request"), as it would on lock_timeout. The worker
// runs retention's DETACH ... CONCURRENTLY under one, so that a heal request
// never waits out the detach's wait for older transactions.
#pragma once

#include "pg/postgres.hpp"

namespace partheal::pg {

class CancelWhen {
 public:
  // Called in a signal handler: it may only read memory (shared memory
  // without locks, racy reads included), never allocate, lock or raise.
  using Wanted = bool (*)() noexcept;

  // `fired`, if given, is set at the end of the scope when it cancelled a
  // wait (left as it was otherwise). One at a time per process.
  explicit CancelWhen(Wanted wanted, bool* fired = nullptr);
  ~CancelWhen();
  CancelWhen(const CancelWhen&) = delete;
  CancelWhen& operator=(const CancelWhen&) = delete;

 private:
  bool* fired_;
};

}  // namespace partheal::pg
