// partheal_nextval(parent, sequence) as a column default: recognised in one
// place, for the registration (manage/shape), for the partitions partheal
// creates (which must never carry it: LIKE ... INCLUDING DEFAULTS would copy
// it, and DROP EXTENSION would then fail on every partition) and for
// partheal_unmanage, which puts nextval(sequence) back wherever it is found.
#pragma once

#include <string>
#include <vector>

#include "pg/postgres.hpp"

extern "C" {
#include "nodes/primnodes.h"
#include "utils/rel.h"
}

namespace partheal::partitions {

// The expression under the implicit casts PostgreSQL adds (serial's
// nextval() is bigint, cast to integer for an integer column).
Node* without_implicit_casts(Node* node);

// The two regclass constants of a call f(parent, sequence) to partheal's own
// partheal_nextval, told by name and by its membership of the extension (a same-named
// function elsewhere is not it); false for any other expression.
bool is_partheal_nextval_call(Node* expr, Oid* parent, Oid* sequence);

// A column of `rel` whose default is partheal_nextval, and the sequence that
// default draws from.
struct PartHealDefault {
  std::string column;
  Oid sequence;
};
std::vector<PartHealDefault> partheal_nextval_defaults(Relation rel);

// A regclass literal that means the same whatever the search_path.
std::string regclass_literal(Oid relid);
// nextval(sequence), as serial declares it: what replaces partheal_nextval.
std::string plain_nextval_sql(Oid sequence);

// ALTER TABLE ONLY schema.table ALTER COLUMN c SET DEFAULT nextval(sequence)
// for each such column of relid; empty when it has none.
std::vector<std::string> restore_nextval_sql(Oid relid);

}  // namespace partheal::partitions
