-- partheal 0.12: plain INSERTs heal. The insert gate (a plan node under
-- every INSERT into a managed table) makes a missing partition in the same
-- statement; partheal_stats gains insert_heals, the heals it made, from a
-- state function of its own.
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.12'" to load this file. \quit

CREATE FUNCTION @extschema@.partheal_insert_state(OUT parent regclass, OUT insert_heals bigint)
  RETURNS SETOF record LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_insert_state';
COMMENT ON FUNCTION @extschema@.partheal_insert_state() IS
  'the heals plain INSERTs made through the insert gate, per managed table, since server start';

-- Every operator qualified (coalesce is syntax): nothing on a reader's
-- search_path can change what the view runs. The columns before
-- insert_heals are 0.6's, unchanged.
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
         d.default_expired_rows,
         -- Heals made for plain INSERTs by the insert gate; heals counts
         -- those of partheal_append and partheal_reserve.
         coalesce(i.insert_heals, 0) AS insert_heals
    FROM @extschema@.partheal_config c
    LEFT JOIN @extschema@.partheal_table_state() s
      ON s.parent::pg_catalog.oid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid
    LEFT JOIN @extschema@.partheal_window_state() w
      ON w.parent::pg_catalog.oid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid
    LEFT JOIN @extschema@.partheal_upkeep_state() d
      ON d.parent::pg_catalog.oid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid
    LEFT JOIN @extschema@.partheal_insert_state() i
      ON i.parent::pg_catalog.oid OPERATOR(pg_catalog.=) c.parent::pg_catalog.oid;
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
  'older than the retention horizon, which partheal leaves there (default_expired_rows), and '
  'the heals plain INSERTs made through the insert gate (insert_heals; heals counts those of '
  'partheal_append and partheal_reserve)';
