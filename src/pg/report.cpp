#include "pg/report.hpp"

#include "pg/boundary.hpp"

namespace partheal::pg {

void report(int level, int sqlerrcode, const std::string& message, const ReportExtras& extras) {
  const char* m = message.c_str();
  const char* d = extras.detail.empty() ? nullptr : extras.detail.c_str();
  const char* h = extras.hint.empty() ? nullptr : extras.hint.c_str();
  const bool hide_statement = extras.hide_statement;
  const bool hide_context = extras.hide_context;
  guard([&] {
    ereport(level,
            (sqlerrcode != 0 ? errcode(sqlerrcode) : 0, errmsg_internal("%s", m),
             d != nullptr ? errdetail_internal("%s", d) : 0, h != nullptr ? errhint("%s", h) : 0,
             errhidestmt(hide_statement), errhidecontext(hide_context)));
  });
}

}  // namespace partheal::pg
