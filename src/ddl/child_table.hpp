// A partition's table before it is attached: its name and the statement that
// creates it. The heal and the attach make partitions the same way, so that
// a table looks the same whichever of them made it.
#pragma once

#include <string>

namespace partheal::ddl {

// parent + suffix, cut to fit NAMEDATALEN. A cut name gets a hash of the whole
// parent name, so two long parents sharing a prefix stay distinct; the suffix
// always survives, since it is what tells two partitions apart.
std::string child_name(const std::string& parent, const std::string& suffix);

// CREATE TABLE schema.child (LIKE schema.parent INCLUDING ...), never
// PARTITION OF, which would lock the parent ACCESS EXCLUSIVE. IDENTITY is left
// out: the child would get a sequence of its own. A parent with a tablespace
// gives it to the child, as PARTITION OF would.
std::string create_like_sql(unsigned int parent_relid, const std::string& schema,
                            const std::string& child, const std::string& parent);

}  // namespace partheal::ddl
