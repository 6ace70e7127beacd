#include "pg/cancel_when.hpp"

#include <csignal>

#include "pg/boundary.hpp"

extern "C" {
#include "miscadmin.h"
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

// In the SIGALRM handler, as PostgreSQL's own lock_timeout handler: the
// flags a cancel request sets, and the latch that wakes a lock wait, which
// then runs CHECK_FOR_INTERRUPTS and raises the cancel.
void on_tick() {
  CancelWhen::Wanted w = wanted_now;
  if (w == nullptr || cancelled) return;
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
  // cannot stop the worker's next work.
  if (cancelled && QueryCancelPending) QueryCancelPending = false;
  if (fired_ != nullptr) *fired_ = cancelled != 0;
}

}  // namespace partheal::pg
