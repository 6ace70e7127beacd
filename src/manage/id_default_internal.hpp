// Inside manage/ (manage.cpp, id_default.cpp): the id column's default, as
// partheal_manage and partheal_unmanage change it. No other folder includes
// this one.
#pragma once

#include "registry/shape.hpp"

namespace partheal::manage {

void install_partheal_nextval(const registry::TableShape& shape);
void restore_nextval(Oid relid);

}  // namespace partheal::manage
