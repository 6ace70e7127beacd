#include "pg/cancel_when.hpp"

#include <csignal>

#include "pg/boundary.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/latch.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

namespace partheal::pg {

namespace {

// How often `wanted` is asked: what a heal request waits at most for the
// worker to give up a detach's wait (one lock slice is 25 ms).
constexpr int kTickMs = 5;

TimeoutId tick = MAX_TIMEOUTS;  // registered at the first use
// Read and written by the timer's handler.
volatile CancelWhen::Wanted wanted_now = nullptr;
volatile sig_atomic_t cancelled = 0;

// In the SIGALRM handler: the flags a cancel request sets, as PostgreSQL's
// StatementCancelHandler sets them, and the latch that wakes the lock wait,
// which then runs CHECK_FOR_INTERRUPTS and raises the cancel. Only while
// the process sleeps on a lock (MyProc->waitLock, set by the lock manager
// for the length of the sleep): work done between the waits (a DETACH's
// catalog changes) is not thrown away; the next tick, 5 ms on, finds the
// next wait.
void on_tick() {
  CancelWhen::Wanted w = wanted_now;
  if (w == nullptr || cancelled || proc_exit_inprogress) return;
  if (MyProc == nullptr || MyProc->waitLock == nullptr) return;
  if (!w()) return;
  cancelled = 1;
  QueryCancelPending = true;
  InterruptPending = true;
  SetLatch(MyLatch);
}

}  // namespace

CancelWhen::CancelWhen(Wanted wanted, bool* fired) : fired_(fired) {
  if (tick == MAX_TIMEOUTS) tick = guard([] { return RegisterTimeout(USER_TIMEOUT, on_tick); });
  cancelled = 0;
  wanted_now = wanted;
  guard([] {
    enable_timeout_every(tick, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kTickMs),
                         kTickMs);
  });
}

CancelWhen::~CancelWhen() {
  // The timer off first, so that the handler cannot run past this point.
  // disable_timeout only reprograms the interval timer.
  disable_timeout(tick, false);
  wanted_now = nullptr;
  // A cancel raised too late to stop the command is dropped, so that it
  // cannot stop the worker's next work; it did not make the command give
  // way. (A cancel request from elsewhere that came in the same moment is
  // dropped with it: the worker's next wait is as short.)
  const bool consumed = cancelled && !QueryCancelPending;
  if (cancelled && QueryCancelPending) QueryCancelPending = false;
  if (fired_ != nullptr) *fired_ = *fired_ || consumed;
  // The asker's wake-up was spent on the lock wait: the worker looks at
  // its requests again before it sleeps.
  if (consumed) SetLatch(MyLatch);
}

}  // namespace partheal::pg
