// Inside manage/: what partheal_manage returns, a line a user can read in
// place of a blank row (issue 35, point 15): how the table is managed, the
// partitions this call made, and what retention will remove.
#pragma once

#include <string>
#include <vector>

#include "registry/registry.hpp"

namespace partheal::manage {

// The partitions attached to the table now (relids), to tell the ones this
// call makes from those it found.
std::vector<Oid> attached_now(Oid relid);

// The summary, once the registration is written and its partitions made:
// `before` is attached_now() from before it, `due` the partitions its
// retention removes at the worker's next poll (say_due_windows).
std::string registration_summary(const registry::TableShape& shape, const registry::Config& config,
                                 const std::vector<Oid>& before, size_t due);

// How far back the drain makes windows for late rows without retention:
// drain_reach as PostgreSQL prints an interval, or 30 days.
std::string drain_reach_text(const registry::Config& config);

// The summary as the text Datum partheal_manage returns.
Datum summary_datum(const std::string& line);

}  // namespace partheal::manage
