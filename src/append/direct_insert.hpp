// One row into a managed parent through the executor's tuple routing, as
// COPY FROM stores its rows, instead of through an SPI INSERT: no plan to
// look up, revalidate and start, no ModifyTable to build and tear down.
//
// It is the INSERT only where the INSERT is nothing more than routing,
// constraints and indexes: the parent has no INSERT trigger (row or
// statement, so no transition table, no foreign key to check and no
// deferred unique constraint to recheck, whose triggers the parent carries
// too), no rule, no row-level security (whose WITH CHECK policies only a
// planned INSERT applies) and no generated column, and no permission hook
// (sepgsql, pgaudit) wants to see the statement; the partition the row
// routes to has no INSERT row trigger of its own and is not a foreign table.
// Anything else takes the INSERT.
#pragma once

#include "append/rows.hpp"
#include "append/target.hpp"

namespace partheal::append {

// Whether the parent allows a direct insert at all: read from the relation
// each call, since a new trigger or policy leaves the target's columns
// alone.
bool direct_insert_fits(const Target& target, Relation parent, const Rows& rows);

// Inserts the one row of `rows` (its key and id already in it), with its
// unnamed columns' defaults, and returns true; or returns false with
// nothing inserted when the partition it routes to is one the direct path
// does not do. The row's defaults are evaluated after the routing, so
// that the INSERT then evaluates them once, unless the routing needs them
// (the parent is a partition itself, or has partitions partitioned again,
// whose keys a default may fill): there a fallback evaluates them twice. A routing miss raises the
// INSERT's own error, which the heal loop recognises.
bool insert_one_direct(Target& target, Relation parent, Rows& rows, PlannedDefaults& defaults);

}  // namespace partheal::append
