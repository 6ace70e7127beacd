// DROP EXTENSION partheal leaves every table writable: before the drop
// runs, a ProcessUtility hook puts the plain nextval default back wherever
// partheal_nextval is one (nextval_default => true), as partheal_unmanage
// does, in the DROP's own transaction. Without it the plain DROP fails on
// those defaults, and the CASCADE that PostgreSQL's HINT suggests drops
// them, so the next INSERT gets a NULL id.
#pragma once

namespace partheal::manage {

void install_drop_extension_hook();

}  // namespace partheal::manage
