-- partheal 0.4 -> 0.5: time-keyed tables, and premake.
-- A registration is an id partition size or a time window; premake is the
-- least number of partitions kept ahead, for ids too (so tables registered
-- before this update get 4, as pg_partman's default). retention and
-- retention_keep_table are stored for the next release, which acts on them.
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.5'" to load this file. \quit

ALTER TABLE @extschema@.partheal_config
  ALTER COLUMN partition_size DROP NOT NULL,
  ADD COLUMN premake integer NOT NULL DEFAULT 4 CHECK (premake BETWEEN 0 AND 1000),
  ADD COLUMN partition_interval interval,
  ADD COLUMN time_zone text,
  ADD COLUMN retention interval,
  ADD COLUMN retention_keep_table boolean NOT NULL DEFAULT false,
  ADD CONSTRAINT partheal_config_one_key
    CHECK ((partition_size IS NULL) <> (partition_interval IS NULL));

DROP FUNCTION @extschema@.partheal_manage(regclass, bigint, integer, boolean);

CREATE FUNCTION @extschema@.partheal_manage(parent regclass, partition_size bigint,
                                            mark_percent integer DEFAULT 80,
                                            nextval_default boolean DEFAULT NULL,
                                            premake integer DEFAULT 4)
  RETURNS void LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_manage';
COMMENT ON FUNCTION @extschema@.partheal_manage(regclass, bigint, integer, boolean, integer) IS
  'register a RANGE(id)-partitioned table whose id comes from a sequence; the caller must own it. '
  'The next partition is created once ids reach mark_percent of the current one; NULL turns '
  'create-ahead off for the table. nextval_default installs partheal_nextval as the id default, '
  'so plain INSERT and COPY rows check the mark too. At least premake partitions are kept ahead '
  'of the sequence, made before this returns';

CREATE FUNCTION @extschema@.partheal_manage(parent regclass, partition_interval interval,
                                            premake integer DEFAULT 4,
                                            retention interval DEFAULT NULL,
                                            retention_keep_table boolean DEFAULT false,
                                            time_zone text DEFAULT 'UTC')
  RETURNS void LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_manage_time';
COMMENT ON FUNCTION @extschema@.partheal_manage(regclass, interval, integer, interval, boolean, text) IS
  'register a table partitioned by RANGE on a timestamptz, timestamp or date column; the caller '
  'must own it. Windows are calendar days, weeks or months local to time_zone, or fixed lengths '
  'under a day aligned to the Unix epoch; the window holding now() and premake after it are kept, '
  'made before this returns';

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

-- partheal_stats gains the time columns at its end: the view is replaced, not
-- dropped, so views and grants on it stay.
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
         s.ahead_claimed_to, s.next_from, s.next_to, s.next_reason,
         (SELECT a.atttypid::pg_catalog.regtype
            FROM pg_catalog.pg_partitioned_table p
            JOIN pg_catalog.pg_attribute a
              ON a.attrelid OPERATOR(pg_catalog.=) p.partrelid
             AND a.attnum OPERATOR(pg_catalog.=) p.partattrs[0]
           WHERE p.partrelid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid) AS key_type,
         c.partition_interval, c.time_zone, c.premake, w.newest_upper, w.next_window
    FROM @extschema@.partheal_config c
    LEFT JOIN @extschema@.partheal_table_state() s
      ON s.parent::pg_catalog.oid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid
    LEFT JOIN @extschema@.partheal_window_state() w
      ON w.parent::pg_catalog.oid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid;
COMMENT ON VIEW @extschema@.partheal_stats IS
  'per managed table since server start: appends, heals, exhaustions, create-ahead attempts, '
  'the watermark (the number of the highest partition a create-ahead mark claimed, '
  'partition numbers being id / partition_size) and ahead_claimed_to (the same as an id: the '
  'end of that partition), the last heal, the partitions the worker keeps ahead of the '
  'sequence position (headroom), a DEFAULT partition attached after registration '
  '(default_partition), and the partition the worker creates next (next_from, next_to) and '
  'when (next_reason); for a time-keyed table its key_type, partition_interval, time_zone, '
  'the newest partition''s upper bound (newest_upper) and the next window (next_window)';
