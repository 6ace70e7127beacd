#include "pg/pause.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "miscadmin.h"
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

}  // namespace partheal::pg
