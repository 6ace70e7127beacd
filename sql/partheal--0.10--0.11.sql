-- partheal 0.11: partheal_workers() gains rounds, the poll rounds the
-- database's workers completed since the server started (or since the
-- launcher began to follow the database): what to wait on for "the worker
-- has looked again since X".
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.11'" to load this file. \quit

-- A function's result columns cannot change in place: dropped and created
-- again (re-issue any GRANT or REVOKE made on it).
DROP FUNCTION @extschema@.partheal_workers();
CREATE FUNCTION @extschema@.partheal_workers(
    OUT datid oid, OUT state text, OUT pid integer, OUT tables integer, OUT queued_attempts integer,
    OUT datname name, OUT rounds bigint)
  RETURNS SETOF record LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_workers';
COMMENT ON FUNCTION @extschema@.partheal_workers() IS
  'the partheal launcher''s databases: the worker''s state and pid, managed tables in shared '
  'memory, queued create-ahead attempts, the database''s name, the poll rounds completed';
