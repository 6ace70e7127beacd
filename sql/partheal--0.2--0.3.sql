-- partheal 0.2 -> 0.3: partheal_stats gains ahead_claimed_to (the watermark
-- as an id) and what the worker creates next (next_from, next_to,
-- next_reason); partheal_workers gains the database's name;
-- partheal_attach_window's outcome not_attached.
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.3'" to load this file. \quit

-- Counters from shared memory, since the server started, and what the
-- worker will create next. Every registered table has a row; one not
-- appended to since the start shows zeros.
CREATE FUNCTION @extschema@.partheal_table_state(
    OUT parent regclass, OUT appends bigint, OUT rows_appended bigint, OUT heals bigint,
    OUT exhaustions bigint, OUT ahead_requested bigint, OUT ahead_created bigint,
    OUT ahead_failed bigint, OUT watermark bigint, OUT last_heal timestamptz,
    OUT headroom integer, OUT ahead_claimed_to bigint, OUT next_from bigint, OUT next_to bigint,
    OUT next_reason text)
  RETURNS SETOF record LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_stats';
-- Every operator qualified (coalesce is syntax): nothing on a reader's search_path
-- can change what the view runs.
-- Replaced in place, the new columns added last, so views built on it and
-- its grants stay; then the 0.2 function it read goes.
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
           WHERE p.partrelid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid) AS default_partition,
         s.ahead_claimed_to, s.next_from, s.next_to, s.next_reason
    FROM @extschema@.partheal_config c
    LEFT JOIN @extschema@.partheal_table_state() s
      ON s.parent::pg_catalog.oid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid;
COMMENT ON VIEW @extschema@.partheal_stats IS
  'per managed table since server start: appends, heals, exhaustions, create-ahead attempts, '
  'the watermark (the number of the highest partition a create-ahead mark claimed, '
  'partition numbers being id / partition_size) and ahead_claimed_to (the same as an id: the '
  'end of that partition), the last heal, the partitions the worker keeps ahead of the '
  'sequence position (headroom), a DEFAULT partition attached after registration '
  '(default_partition), and the partition the worker creates next (next_from, next_to) and '
  'when (next_reason)';
DROP FUNCTION @extschema@.partheal_table_stats();

-- A function's result columns cannot change in place: dropped and created
-- again (re-issue any GRANT or REVOKE made on it).
DROP FUNCTION @extschema@.partheal_workers();
CREATE FUNCTION @extschema@.partheal_workers(
    OUT datid oid, OUT state text, OUT pid integer, OUT tables integer, OUT queued_attempts integer,
    OUT datname name)
  RETURNS SETOF record LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_workers';
COMMENT ON FUNCTION @extschema@.partheal_workers() IS
  'the partheal launcher''s databases: the worker''s state and pid, managed tables in shared '
  'memory, queued create-ahead attempts, the database''s name';

COMMENT ON FUNCTION @extschema@.partheal_attach_window(regclass, text, text, text) IS
  'attach the window [lower, upper) of a RANGE-partitioned table the caller owns, moving its '
  'rows out of the DEFAULT partition without losing or rejecting a concurrent write; '
  'outcome is attached, already_attached, default_holds_rows, or not_attached for a table '
  'with no DEFAULT partition';
