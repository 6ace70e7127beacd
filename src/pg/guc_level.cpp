#include "pg/guc_level.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "utils/guc.h"
}

namespace partheal::pg {

int enter_safe_search_path() {
  return guard([] {
    int level = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    return level;
  });
}

void set_local(const char* name, const std::string& value) {
  const char* text = value.c_str();
  guard([&] {
    (void)set_config_option(name, text, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                            false);
  });
}

void set_local_as_server(const char* name, const std::string& value) {
  const char* text = value.c_str();
  guard([&] {
    (void)set_config_option(name, text, PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
  });
}

void leave_guc_level(int level) {
  guard([&] { AtEOXact_GUC(true, level); });
}

}  // namespace partheal::pg
