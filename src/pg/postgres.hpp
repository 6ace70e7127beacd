// The one way partheal's C++ files include PostgreSQL: after the standard
// library and fmt (port.h redefines snprintf), and with C linkage.
#pragma once

#include "pg/error.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}
