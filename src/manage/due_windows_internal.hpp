// Inside manage/: the NOTICE of what a registration's retention removes.
#pragma once

#include "registry/registry.hpp"

namespace partheal::manage {

// Names the attached partitions whose upper bound is at or before the
// retention horizon of this registration, which the worker detaches (and
// drops) at its next poll; says nothing when there are none. Returns how many.
size_t say_due_windows(const registry::TableShape& shape, const registry::Config& config);

}  // namespace partheal::manage
