// The one heal loop. Every append path (a single row, a batch, many calls in
// one transaction) runs its insert through insert_until_covered.
#pragma once

#include <functional>
#include <vector>

#include "manage/registry.hpp"

namespace partheal::heal {

// Runs insert() once every id has a partition. A missing partition is
// created (by the worker, committed at once) and the insert runs again at
// once; the loop allows one heal for the boundary plus partheal.max_retries.
void insert_until_covered(const manage::ManagedTable& table, Relation parent,
                          const std::vector<int64>& ids, const std::function<void()>& insert);

// The same loop with nothing to insert: returns once every id has a
// partition (partheal_reserve).
void cover(const manage::ManagedTable& table, Relation parent, const std::vector<int64>& ids);

// A 23514 raised by tuple routing at `parent` itself, told apart from CHECK
// and partition constraint violations by the ErrorData fields, never by
// message text. A miss at a sub-partitioned partition below it is not a
// heal's business: it stays PostgreSQL's own error.
bool is_routing_miss(const PgError& e, Oid parent);

}  // namespace partheal::heal
