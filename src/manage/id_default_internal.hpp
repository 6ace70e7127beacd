// Inside manage/ (manage.cpp, id_default.cpp): the id column's default, as
// partheal_manage and partheal_unmanage change it. No other folder includes
// this one.
#pragma once

#include <vector>

#include "registry/shape.hpp"

namespace partheal::manage {

void install_partheal_nextval(const registry::TableShape& shape);
void restore_nextval(Oid relid);
void restore_every_nextval();
void restore_nextval_of(const std::vector<Oid>& tables);

}  // namespace partheal::manage
