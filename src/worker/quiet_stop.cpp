#include "worker/quiet_stop.hpp"

#include "pg/postgres.hpp"

extern "C" {
#include "utils/elog.h"
}

namespace partheal::worker {

namespace {

emit_log_hook_type previous_hook = nullptr;

// Runs inside PostgreSQL's error reporting, where nothing may raise: it only
// reads and sets fields of the report. It never throws, so it needs no
// C++/PostgreSQL boundary of its own.
void leave_out_admin_shutdown(ErrorData* edata) {
  if (edata->elevel == FATAL && edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
    edata->output_to_server = false;
  if (previous_hook != nullptr) previous_hook(edata);
}

}  // namespace

void quiet_admin_shutdown() {
  previous_hook = emit_log_hook;
  emit_log_hook = leave_out_admin_shutdown;
}

}  // namespace partheal::worker
