// A partition's table before it is attached: its name and the statement that
// creates it. The heal and the attach make partitions the same way, so that
// a table looks the same whichever of them made it.
#pragma once

#include <string>

#include "partitions/parent.hpp"

namespace partheal::partitions {

// parent + suffix, cut to fit NAMEDATALEN. A cut name gets a hash of the whole
// parent name, so two long parents sharing a prefix stay distinct; the suffix
// always survives, since it is what tells two partitions apart.
std::string child_name(const std::string& parent, const std::string& suffix);

// child_name(parent, suffix), or, when a table, view, type or anything else
// of that name is in the way (a detached partition, a table someone made
// under a future partition's name), the first free one of
// child_name(parent, suffix + "_1"), "_2", ... A heal never fails over a
// name, and never takes over a table it did not make.
std::string free_child_name(unsigned int namespace_oid, const std::string& parent,
                            const std::string& suffix);

// CREATE TABLE schema.child (LIKE schema.parent INCLUDING ...), never
// PARTITION OF, which would lock the parent ACCESS EXCLUSIVE. IDENTITY is left
// out: the child would get a sequence of its own. A parent with a tablespace
// gives it to the child, as PARTITION OF would.
std::string create_like_sql(unsigned int parent_relid, const std::string& schema,
                            const std::string& child, const std::string& parent);

// ALTER TABLE schema.parent ATTACH PARTITION schema.child FOR VALUES
// FROM (lower) TO (upper). `range` is "FROM (...) TO (...)" of bounds
// partheal computed (integers) or quoted itself (literals, range_key.hpp).
std::string attach_partition_sql(const std::string& schema, const std::string& parent,
                                 const std::string& child, const std::string& range);

// Runs create_like_sql for `child`, in the parent's schema, through SPI
// (connected, as the role that is to own the table), then gives every
// column that copied partheal_nextval from the parent nextval(sequence)
// instead: a partition's own default is used only by rows inserted into
// the partition directly, and must not make the partition depend on
// partheal (DROP EXTENSION would fail on it). PH006 on a Citus worker node.
void create_child_table(const Parent& parent, const std::string& child);

}  // namespace partheal::partitions
