#include "pg/pause.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "utils/guc.h"
#include "storage/latch.h"
#include "utils/wait_event.h"
}

namespace partheal::pg {

void pause_ms(long ms) {
  guard([&] {
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms,
                    PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
  });
}

void wait_for_work_ms(long ms) {
  pause_ms(ms);
  guard([] {
    if (ConfigReloadPending) {
      ConfigReloadPending = false;
      ProcessConfigFile(PGC_SIGHUP);
    }
  });
}

void back_off_ms(long ms) {
  guard([&] { (void)WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms, PG_WAIT_EXTENSION); });
}

}  // namespace partheal::pg
