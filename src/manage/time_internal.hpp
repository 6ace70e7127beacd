// Inside manage/: the time form's arguments, checked against the table.
#pragma once

#include "registry/registry.hpp"

namespace partheal::manage {

// partition_interval, premake, retention, retention_keep_table, time_zone
// and drain_default of partheal_manage's time form, checked for a table of `shape`
// (22023, 22004, 0A000 and 42804 with hints), as the Config to register.
// drain_default and retention_keep_table NULL keep the registration's (true
// and false for a new one): *drain_given and *keep_given say whether they
// were given.
registry::Config time_config(FunctionCallInfo fcinfo, const registry::TableShape& shape,
                             bool* drain_given, bool* keep_given);

// The id form refuses a time-keyed table (42804).
void refuse_time_key_for_ids(const registry::TableShape& shape);

}  // namespace partheal::manage
