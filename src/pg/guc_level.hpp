// GUC nesting levels for partheal's own SQL (pg/own_sql.hpp pairs them with
// SPI): search_path pinned to pg_catalog, and optionally a lock_timeout. The settings last until
// leave() or until the (sub)transaction that was current at enter() aborts.
#pragma once

#include <string>

#include "pg/postgres.hpp"

namespace partheal::pg {

int enter_safe_search_path();
void set_local(const char* name, const std::string& value);
// For a superuser-only setting (deadlock_timeout) that partheal sets for
// its own waits, whoever the caller is.
void set_local_as_server(const char* name, const std::string& value);
void leave_guc_level(int level);

}  // namespace partheal::pg
