-- partheal 0.6: heal missing id-range partitions on append, inside the backend.
\echo Use "CREATE EXTENSION partheal" to load this file. \quit

-- First: refuse to install where the library was not preloaded, with a HINT
-- that names the setting.
CREATE FUNCTION @extschema@.partheal_require_preload() RETURNS void
  LANGUAGE c AS 'MODULE_PATHNAME', 'partheal_require_preload';
SELECT @extschema@.partheal_require_preload();

-- One row per managed table. pg_dump dumps the rows with the extension.
CREATE TABLE @extschema@.partheal_config (
  parent         regclass PRIMARY KEY,
  partition_size bigint   CHECK (partition_size > 0),  -- ids; NULL for a time-keyed table
  mark_percent   integer  DEFAULT 80 CHECK (mark_percent BETWEEN 1 AND 99),  -- NULL: no create-ahead
  premake        integer  NOT NULL DEFAULT 4 CHECK (premake BETWEEN 0 AND 1000),
  partition_interval   interval,  -- a time-keyed table's windows
  time_zone            text,      -- and the zone its days and months are local to
  retention            interval,
  retention_keep_table boolean NOT NULL DEFAULT false,
  drain_default        boolean NOT NULL DEFAULT true,  -- the worker drains a time-keyed table's DEFAULT
  retention_ids        bigint CHECK (retention_ids > 0),  -- an id-keyed table's retention, in ids
  CONSTRAINT partheal_config_one_key CHECK ((partition_size IS NULL) <> (partition_interval IS NULL))
);
SELECT pg_catalog.pg_extension_config_dump('@extschema@.partheal_config', '');
REVOKE ALL ON @extschema@.partheal_config FROM PUBLIC;
GRANT SELECT ON @extschema@.partheal_config TO PUBLIC;

CREATE FUNCTION @extschema@.partheal_manage(parent regclass, partition_size bigint,
                                            mark_percent integer DEFAULT 80,
                                            nextval_default boolean DEFAULT NULL,
                                            premake integer DEFAULT 4,
                                            retention bigint DEFAULT NULL,
                                            retention_keep_table boolean DEFAULT NULL)
  RETURNS void LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_manage';
COMMENT ON FUNCTION @extschema@.partheal_manage(regclass, bigint, integer, boolean, integer, bigint, boolean) IS
  'register a RANGE(id)-partitioned table whose id comes from a sequence; the caller must own it. '
  'The next partition is created once ids reach mark_percent of the current one; NULL turns '
  'create-ahead off for the table. nextval_default installs partheal_nextval as the id default, '
  'so plain INSERT and COPY rows check the mark too. At least premake partitions are kept ahead '
  'of the sequence, made before this returns. With retention, partitions ending at or below the '
  'sequence position minus retention ids are detached and dropped (kept, with '
  'retention_keep_table; NULL: as registered, else false)';

CREATE FUNCTION @extschema@.partheal_manage(parent regclass, partition_interval interval,
                                            premake integer DEFAULT 4,
                                            retention interval DEFAULT NULL,
                                            retention_keep_table boolean DEFAULT NULL,
                                            time_zone text DEFAULT 'UTC',
                                            drain_default boolean DEFAULT NULL)
  RETURNS void LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_manage_time';
COMMENT ON FUNCTION @extschema@.partheal_manage(regclass, interval, integer, interval, boolean, text, boolean) IS
  'register a table partitioned by RANGE on a timestamptz, timestamp or date column; the caller '
  'must own it. Windows are calendar days, weeks or months local to time_zone, or fixed lengths '
  'under a day aligned to the Unix epoch; the window holding now() and premake after it are kept, '
  'made before this returns. With drain_default (NULL: as registered before, else true), the '
  'worker moves rows a DEFAULT partition holds into their windows and keeps windows ahead past it';

-- A second argument with no type yet ('100000', '1 day', a psql :'var')
-- fits both forms above, and PostgreSQL would refuse to choose: this form
-- takes it as text and passes it on, a number to the id form and anything
-- else to the interval form.
CREATE FUNCTION @extschema@.partheal_manage(parent regclass, partition text)
  RETURNS void LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF partition OPERATOR(pg_catalog.~) '^\s*[0-9]+\s*$' THEN
    PERFORM @extschema@.partheal_manage(parent, partition::pg_catalog.int8);
  ELSE
    PERFORM @extschema@.partheal_manage(parent, partition::pg_catalog.interval);
  END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.partheal_manage(regclass, text) IS
  'partheal_manage with an untyped second argument: a number registers an id-keyed table, an '
  'interval a time-keyed one';

CREATE FUNCTION @extschema@.partheal_unmanage(parent regclass)
  RETURNS void LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_unmanage';
COMMENT ON FUNCTION @extschema@.partheal_unmanage(regclass) IS 'remove a table''s registration';

CREATE FUNCTION @extschema@.partheal_append(parent regclass, rows jsonb)
  RETURNS SETOF bigint LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_append';
COMMENT ON FUNCTION @extschema@.partheal_append(regclass, jsonb) IS
  'insert one JSON object or an array of objects, creating missing partitions; returns the ids';

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
  'outcome is attached, already_attached, default_holds_rows, or not_attached for a table '
  'with no DEFAULT partition';

CREATE PROCEDURE @extschema@.partheal_partition_data(parent regclass, window_size text,
                                                     batch_rows integer DEFAULT 50000)
  LANGUAGE c AS 'MODULE_PATHNAME', 'partheal_partition_data';
COMMENT ON PROCEDURE @extschema@.partheal_partition_data(regclass, text, integer) IS
  'empty the DEFAULT partition window by window, oldest first, each window attached like '
  'partheal_attach_window; CALLed outside a transaction block it commits after each window';

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
-- The same rows with a time-keyed table's windows too. A function of its
-- own, so that partheal_stats gains columns (CREATE OR REPLACE VIEW) where
-- changing partheal_table_state would drop the view, and views users built
-- on it, in an update.
CREATE FUNCTION @extschema@.partheal_window_state(
    OUT parent regclass, OUT appends bigint, OUT rows_appended bigint, OUT heals bigint,
    OUT exhaustions bigint, OUT ahead_requested bigint, OUT ahead_created bigint,
    OUT ahead_failed bigint, OUT watermark bigint, OUT last_heal timestamptz,
    OUT headroom integer, OUT ahead_claimed_to bigint, OUT next_from bigint, OUT next_to bigint,
    OUT next_reason text, OUT newest_upper text, OUT next_window text)
  RETURNS SETOF record LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_stats';
-- The worker's upkeep counters, since server start: the drain of DEFAULT
-- and retention. A function of its own, so that the older state functions
-- keep their columns.
CREATE FUNCTION @extschema@.partheal_upkeep_state(
    OUT parent regclass, OUT drained_rows bigint, OUT drained_windows bigint,
    OUT dropped_windows bigint, OUT detached_windows bigint, OUT default_expired_rows bigint)
  RETURNS SETOF record LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_upkeep_state';
-- Every operator qualified (coalesce is syntax): nothing on a reader's search_path
-- can change what the view runs.
CREATE VIEW @extschema@.partheal_stats AS
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
         s.ahead_claimed_to, s.next_from, s.next_to, s.next_reason,
         (SELECT a.atttypid::pg_catalog.regtype
            FROM pg_catalog.pg_partitioned_table p
            JOIN pg_catalog.pg_attribute a
              ON a.attrelid OPERATOR(pg_catalog.=) p.partrelid
             AND a.attnum OPERATOR(pg_catalog.=) p.partattrs[0]
           WHERE p.partrelid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid) AS key_type,
         c.partition_interval, c.time_zone, c.premake, w.newest_upper, w.next_window,
         -- The drain is a time-keyed table's.
         CASE WHEN c.partition_interval IS NOT NULL THEN c.drain_default END AS drain_default,
         -- The rows in DEFAULT, from the cumulative statistics: an estimate,
         -- behind by as long as the writers' statistics take to be flushed.
         -- A partitioned or foreign DEFAULT has no such count.
         (SELECT pg_catalog.pg_stat_get_live_tuples(p.partdefid)
            FROM pg_catalog.pg_partitioned_table p
            JOIN pg_catalog.pg_class d ON d.oid OPERATOR(pg_catalog.=) p.partdefid
           WHERE p.partrelid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid
             AND d.relkind OPERATOR(pg_catalog.=) 'r'::pg_catalog."char") AS default_rows,
         coalesce(d.drained_rows, 0) AS drained_rows,
         coalesce(d.drained_windows, 0) AS drained_windows,
         c.retention, c.retention_ids, c.retention_keep_table,
         coalesce(d.dropped_windows, 0) AS dropped_windows,
         coalesce(d.detached_windows, 0) AS detached_windows,
         -- Rows in DEFAULT older than the retention horizon's window, as
         -- the drain last counted them (once a minute, up to 10,001):
         -- partheal makes no window for them and never drops them.
         d.default_expired_rows
    FROM @extschema@.partheal_config c
    LEFT JOIN @extschema@.partheal_table_state() s
      ON s.parent::pg_catalog.oid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid
    LEFT JOIN @extschema@.partheal_window_state() w
      ON w.parent::pg_catalog.oid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid
    LEFT JOIN @extschema@.partheal_upkeep_state() d
      ON d.parent::pg_catalog.oid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid;
COMMENT ON VIEW @extschema@.partheal_stats IS
  'per managed table since server start: appends, heals, exhaustions, create-ahead attempts, '
  'the watermark (the number of the highest partition a create-ahead mark claimed, '
  'partition numbers being id / partition_size) and ahead_claimed_to (the same as an id: the '
  'end of that partition), the last heal, the partitions the worker keeps ahead of the '
  'sequence position (headroom), a DEFAULT partition attached after registration '
  '(default_partition), and the partition the worker creates next (next_from, next_to) and '
  'when (next_reason); for a time-keyed table its key_type, partition_interval, time_zone, '
  'the newest partition''s upper bound (newest_upper) and the next window (next_window); '
  'whether the worker drains its DEFAULT partition (drain_default), an estimate of the rows '
  'there (default_rows), and the rows and windows the drain moved (drained_rows, '
  'drained_windows); its retention (an interval, or retention_ids for an id-keyed table) and '
  'retention_keep_table, and the windows retention '
  'dropped (dropped_windows) or detached and kept (detached_windows), and the rows in DEFAULT '
  'older than the retention horizon, which partheal leaves there (default_expired_rows)';
GRANT SELECT ON @extschema@.partheal_stats TO PUBLIC;

-- A dropped table leaves no registration behind.
CREATE FUNCTION @extschema@.partheal_forget_dropped() RETURNS event_trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  DELETE FROM @extschema@.partheal_config c
   USING pg_event_trigger_dropped_objects() d
   WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objsubid = 0
     AND c.parent::oid = d.objid;
END
$$;
REVOKE ALL ON FUNCTION @extschema@.partheal_forget_dropped() FROM PUBLIC;
CREATE EVENT TRIGGER partheal_forget_dropped ON sql_drop
  EXECUTE FUNCTION @extschema@.partheal_forget_dropped();

-- The launcher's view of every database it follows: whether a partheal
-- worker runs there (running, starting, paused for database DDL, no slot,
-- no extension, stopped), its pid, and the shared state the database holds.
CREATE FUNCTION @extschema@.partheal_workers(
    OUT datid oid, OUT state text, OUT pid integer, OUT tables integer, OUT queued_attempts integer,
    OUT datname name)
  RETURNS SETOF record LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_workers';
COMMENT ON FUNCTION @extschema@.partheal_workers() IS
  'the partheal launcher''s databases: the worker''s state and pid, managed tables in shared '
  'memory, queued create-ahead attempts, the database''s name';
