-- partheal 0.5 -> 0.6: the worker's drain of a time-keyed table's DEFAULT
-- partition, switched per table; retention, of time-keyed tables (stored
-- since 0.5) and of id-keyed ones; their counters in partheal_stats.
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.6'" to load this file. \quit

-- true: the worker moves the rows a time-keyed table's DEFAULT partition
-- holds for a window into that window, and keeps windows ahead past it
-- (partheal.drain_default turns it off for the whole server). Tables
-- registered before this update keep what 0.5 did with them: drained only
-- where the server set partheal.drain_default on (0.5's default was off).
ALTER TABLE @extschema@.partheal_config
  ADD COLUMN drain_default boolean NOT NULL DEFAULT false;
UPDATE @extschema@.partheal_config
   SET drain_default = true
 WHERE EXISTS (SELECT FROM pg_catalog.pg_settings s
                WHERE s.name OPERATOR(pg_catalog.=) 'partheal.drain_default'
                  AND s.setting OPERATOR(pg_catalog.=) 'on'
                  AND s.source OPERATOR(pg_catalog.<>) 'default');
ALTER TABLE @extschema@.partheal_config ALTER COLUMN drain_default SET DEFAULT true;
-- An id-keyed table's retention, in ids below the sequence position.
ALTER TABLE @extschema@.partheal_config
  ADD COLUMN retention_ids bigint CHECK (retention_ids > 0);

DROP FUNCTION @extschema@.partheal_manage(regclass, bigint, integer, boolean, integer);
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


DROP FUNCTION @extschema@.partheal_manage(regclass, interval, integer, interval, boolean, text);
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

-- The worker's upkeep counters, since server start: the drain of DEFAULT
-- and retention. A function of its own, so that the older state functions
-- keep their columns.
CREATE FUNCTION @extschema@.partheal_upkeep_state(
    OUT parent regclass, OUT drained_rows bigint, OUT drained_windows bigint,
    OUT dropped_windows bigint, OUT detached_windows bigint, OUT default_expired_rows bigint)
  RETURNS SETOF record LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_upkeep_state';

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
