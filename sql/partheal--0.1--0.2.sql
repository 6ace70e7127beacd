-- partheal 0.1 -> 0.2: plain INSERT and COPY writers (partheal_nextval,
-- partheal_reserve, nextval_default), the headroom in partheal_stats, and
-- partheal_attach_window and partheal_partition_data.
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.2'" to load this file. \quit

DROP FUNCTION @extschema@.partheal_manage(regclass, bigint, integer);
CREATE FUNCTION @extschema@.partheal_manage(parent regclass, partition_size bigint,
                                            mark_percent integer DEFAULT 80,
                                            nextval_default boolean DEFAULT NULL)
  RETURNS void LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_manage';
COMMENT ON FUNCTION @extschema@.partheal_manage(regclass, bigint, integer, boolean) IS
  'register a RANGE(id)-partitioned table whose id comes from a sequence; the caller must own it. '
  'The next partition is created once ids reach mark_percent of the current one; NULL turns '
  'create-ahead off for the table. nextval_default installs partheal_nextval as the id default, '
  'so plain INSERT and COPY rows check the mark too';

CREATE FUNCTION @extschema@.partheal_nextval(parent regclass, sequence regclass)
  RETURNS bigint LANGUAGE c VOLATILE PARALLEL UNSAFE AS 'MODULE_PATHNAME', 'partheal_nextval';
COMMENT ON FUNCTION @extschema@.partheal_nextval(regclass, regclass) IS
  'nextval of the table''s id sequence that also checks the create-ahead mark; the id default '
  'installed by partheal_manage(..., nextval_default => true)';

CREATE FUNCTION @extschema@.partheal_reserve(parent regclass, ids bigint)
  RETURNS integer LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_reserve';
COMMENT ON FUNCTION @extschema@.partheal_reserve(regclass, bigint) IS
  'create every partition the next ids values of the table''s sequence need, before a COPY or '
  'INSERT ... SELECT; returns the partitions created';

-- Attach a window of a RANGE-partitioned table under a live writer, moving
-- its rows out of DEFAULT first; runs in the caller's transaction.
CREATE FUNCTION @extschema@.partheal_attach_window(parent regclass, lower text, upper text,
                                                   partition_name text DEFAULT NULL)
  RETURNS TABLE (partition regclass, outcome text, rows_moved bigint, attempts integer)
  LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_attach_window';
COMMENT ON FUNCTION @extschema@.partheal_attach_window(regclass, text, text, text) IS
  'attach the window [lower, upper) of a RANGE-partitioned table the caller owns, moving its '
  'rows out of the DEFAULT partition without losing or rejecting a concurrent write; '
  'outcome is attached, already_attached or default_holds_rows';

CREATE PROCEDURE @extschema@.partheal_partition_data(parent regclass, window_size text,
                                                     batch_rows integer DEFAULT 50000)
  LANGUAGE c AS 'MODULE_PATHNAME', 'partheal_partition_data';
COMMENT ON PROCEDURE @extschema@.partheal_partition_data(regclass, text, integer) IS
  'empty the DEFAULT partition window by window, oldest first, each window attached like '
  'partheal_attach_window; CALLed outside a transaction block it commits after each window';

-- Counters from shared memory, since the server started. Every registered
-- table has a row; one not appended to since the start shows zeros.
CREATE FUNCTION @extschema@.partheal_table_stats(
    OUT parent regclass, OUT appends bigint, OUT rows_appended bigint, OUT heals bigint,
    OUT exhaustions bigint, OUT ahead_requested bigint, OUT ahead_created bigint,
    OUT ahead_failed bigint, OUT watermark bigint, OUT last_heal timestamptz,
    OUT headroom integer)
  RETURNS SETOF record LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_stats';
-- Every operator qualified (coalesce is syntax): nothing on a reader's search_path
-- can change what the view runs.
-- Replaced in place, headroom added last, so views built on it and its
-- grants stay; then the old function goes.
CREATE OR REPLACE VIEW @extschema@.partheal_stats AS
  SELECT c.parent,
         coalesce(s.appends, 0) AS appends,
         coalesce(s.rows_appended, 0) AS rows_appended,
         coalesce(s.heals, 0) AS heals,
         coalesce(s.exhaustions, 0) AS exhaustions,
         coalesce(s.ahead_requested, 0) AS ahead_requested,
         coalesce(s.ahead_created, 0) AS ahead_created,
         coalesce(s.ahead_failed, 0) AS ahead_failed,
         s.watermark, s.last_heal, s.headroom,
         -- A DEFAULT partition attached after registration: rows without a
         -- partition go there, and partheal creates no partitions meanwhile.
         (SELECT CASE WHEN p.partdefid OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
                      THEN p.partdefid::pg_catalog.regclass END
            FROM pg_catalog.pg_partitioned_table p
           WHERE p.partrelid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid) AS default_partition
    FROM @extschema@.partheal_config c
    LEFT JOIN @extschema@.partheal_table_stats() s
      ON s.parent::pg_catalog.oid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid;
COMMENT ON VIEW @extschema@.partheal_stats IS
  'per managed table since server start: appends, heals, exhaustions, create-ahead attempts, '
  'the watermark (highest partition number attempted), the last heal, and the partitions the '
  'worker keeps ahead of the sequence position (headroom), and a DEFAULT partition attached '
  'after registration (default_partition)';
DROP FUNCTION @extschema@.partheal_stats();


-- The launcher's view of every database it follows: whether a partheal
-- worker runs there (running, starting, paused for database DDL, no slot,
-- no extension, stopped), its pid, and the shared state the database holds.
CREATE FUNCTION @extschema@.partheal_workers(
    OUT datid oid, OUT state text, OUT pid integer, OUT tables integer, OUT queued_attempts integer)
  RETURNS SETOF record LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_workers';
COMMENT ON FUNCTION @extschema@.partheal_workers() IS
  'the partheal launcher''s databases: the worker''s state and pid, managed tables in shared '
  'memory, queued create-ahead attempts';
