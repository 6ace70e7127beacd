// Database DDL that needs a database to itself: DROP DATABASE, ALTER
// DATABASE ... RENAME, ALTER DATABASE ... SET TABLESPACE, and CREATE
// DATABASE ... TEMPLATE. PostgreSQL refuses them while any other process is
// connected, the partheal worker included. A ProcessUtility hook pauses the
// worker for exactly the statement, once PostgreSQL's own checks that come
// first (ownership, transaction block) say it can run, and resumes it
// whether the statement succeeds, fails or is cancelled.
#pragma once

namespace partheal::worker {

void install_database_ddl_hook();

}  // namespace partheal::worker
