// partheal's log lines and notices, written once. A message partheal built
// itself (with its PHLnn code in front, or naming tables it has quoted) is
// reported as is: errmsg_internal, never a format string.
#pragma once

#include <string>

#include "pg/postgres.hpp"

namespace partheal::pg {

struct ReportExtras {
  std::string detail;
  std::string hint;
  bool hide_statement = false;  // the STATEMENT line: the caller's, not partheal's
  bool hide_context = false;
};

// `level` below ERROR (DEBUG1, LOG, NOTICE, WARNING); `sqlerrcode` 0 leaves
// PostgreSQL's default for the level. Errors are thrown, with pg::fail.
void report(int level, int sqlerrcode, const std::string& message, const ReportExtras& extras = {});

}  // namespace partheal::pg
