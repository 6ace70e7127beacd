-- partheal 0.13: partheal_workers() gains backing_off, the steps of the
-- database's upkeep (create-ahead's catch-up, the drain of DEFAULT,
-- retention) that wait now for their back-off after a failure. The worker
-- keeps its back-offs in shared memory, per job, table and window.
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.13'" to load this file. \quit

-- A function's result columns cannot change in place: dropped and created
-- again (re-issue any GRANT or REVOKE made on it).
DROP FUNCTION @extschema@.partheal_workers();
CREATE FUNCTION @extschema@.partheal_workers(
    OUT datid oid, OUT state text, OUT pid integer, OUT tables integer, OUT queued_attempts integer,
    OUT datname name, OUT rounds bigint, OUT backing_off integer)
  RETURNS SETOF record LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_workers';
COMMENT ON FUNCTION @extschema@.partheal_workers() IS
  'the partheal launcher''s databases: the worker''s state and pid, managed tables in shared '
  'memory, queued create-ahead attempts, the database''s name, the poll rounds completed, the '
  'upkeep steps backing off';
