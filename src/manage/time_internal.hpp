// Inside manage/: the time form's arguments, checked against the table.
#pragma once

#include "registry/registry.hpp"

namespace partheal::manage {

// partition_interval, premake, retention, retention_keep_table, time_zone,
// drain_default and drain_reach of partheal_manage's time form, checked for
// a table of `shape` (22023, 22004, 0A000 and 42804 with hints), as the
// Config to register. drain_default, retention_keep_table and drain_reach
// NULL keep the registration's (true, false and 30 days for a new one):
// *drain_given, *keep_given and *reach_given say whether they were given.
registry::Config time_config(FunctionCallInfo fcinfo, const registry::TableShape& shape,
                             bool* drain_given, bool* keep_given, bool* reach_given);

// The id form refuses a time-keyed table (42804).
void refuse_time_key_for_ids(const registry::TableShape& shape);

}  // namespace partheal::manage
