#include "pg/pause.hpp"

#include <fmt/format.h>

#include "pg/report.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"

extern "C" {
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "utils/guc.h"
#include "storage/latch.h"
#include "utils/wait_event.h"
}

namespace partheal::pg {

namespace {

void sleep_on_latch(long ms, uint32 wait_event) {
  guard([&] {
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms, wait_event);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
  });
}

}  // namespace

uint32 named_wait_event(const char* name, uint32& registered) {
  if (registered != 0) return registered;
  try {
    registered = guard([&] { return compat::wait_event(name); });
  } catch (const PgError& e) {
    // A name is a nicety: the wait goes on as plain "Extension", said once.
    guard([] { compat::release_wait_event_lock(); });
    registered = PG_WAIT_EXTENSION;
    report(LOG, 0,
           fmt::format("partheal: its waits show as \"Extension\" in this process: could not "
                       "name the wait event \"{}\": {}",
                       name, e.what()));
  }
  return registered;
}

void pause_ms(long ms) {
  static uint32 event = 0;
  sleep_on_latch(ms, named_wait_event("PartHealPause", event));
}

void wait_for_work_ms(long ms) {
  static uint32 event = 0;
  sleep_on_latch(ms, named_wait_event("PartHealIdle", event));
  guard([] {
    if (ConfigReloadPending) {
      ConfigReloadPending = false;
      ProcessConfigFile(PGC_SIGHUP);
    }
  });
}

void back_off_ms(long ms) {
  static uint32 event = 0;
  uint32 wait_event = named_wait_event("PartHealBackOff", event);
  guard([&] { (void)WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms, wait_event); });
}

}  // namespace partheal::pg
