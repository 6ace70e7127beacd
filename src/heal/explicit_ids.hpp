// Who may make partheal create partitions with ids they chose themselves.
//
// Partitions outlive the caller's ROLLBACK and belong to the table's owner.
// Ids drawn from the sequence need partitions the owner's own traffic would
// need anyway; explicit ids could be spaced one partition apart and make
// hundreds in one call. So for a caller that does not own the table, an
// explicit id is healed only inside a window that the owner's traffic
// moves: within W partitions of the sequence position's, either side, W
// being partheal.max_ahead_partitions, so at most 2W + 1 partitions however
// many calls it makes. Ids outside get 42501 before anything is created.
// The owner (and a superuser) is not limited.
//
// On a Citus worker node, a table the coordinator manages is judged by the
// coordinator, which makes its partitions, by its own registration, read
// fresh, and every node's sequence position; the retention of given ids
// of the node's own range is judged here too, before anything is drawn.
// The node says which ids it drew; the coordinator believes it only for an
// id its node's position is past, which only that node's sequence could
// have given.
#pragma once

#include <vector>

#include "registry/registry.hpp"

namespace partheal::heal {

// Who counts as the table's owner for the rules below: the current user
// (partheal_append, whose caller chose its rows), or, for a plain INSERT
// through the insert gate, the current user and the role outside any
// SECURITY DEFINER function both (a definer function or trigger of the
// owner's inserting keys another role chose is judged as that role).
enum class Judged { kCurrentUser, kAlsoOuterUser };

// `explicit_ids`: the ids the caller gave, not drew. Throws 42501 if one
// needs a partition outside the window and the caller does not own the table.
// `drawn_on_a_node`: ids a Citus worker node says it drew, also allowed at
// or below the position of the worker node whose range they are in (a
// batch drawn there can span more partitions than the window).
void refuse_explicit_ids_out_of_window(const registry::ManagedTable& table, Relation parent,
                                       const std::vector<int64>& explicit_ids,
                                       bool drawn_on_a_node = false,
                                       Judged judged = Judged::kCurrentUser);

// The same rule for a time-keyed table, whose keys anyone may choose: for a
// caller that does not own the table, a missing window is healed only from
// `premake` windows before now's (the transaction's now()) to `premake`
// after it. Throws 42501 for a key outside, before anything is created.
void refuse_far_windows(const registry::ManagedTable& table, Relation parent,
                        const std::vector<int64>& keys, Judged judged = Judged::kCurrentUser);

// A table with a retention: a missing partition that would end at or
// before the horizon (now() - retention, or the sequence position minus
// retention ids for the ids given) is not made, for anyone, since retention
// would drop it at once. Throws PH005 before anything is created. (A table
// with a DEFAULT routes such rows there, and never gets here.)
void refuse_keys_past_retention(const registry::ManagedTable& table, Relation parent,
                                const std::vector<int64>& keys);

}  // namespace partheal::heal
