-- partheal 0.10: partheal_manage returns a line that says how the table is
-- managed, the partitions the call made and what retention will remove, in
-- place of a blank row (a registration that adds retention names the
-- partitions it removes in a NOTICE too); and the time form takes
-- drain_reach, how far back before now the worker's drain makes windows for
-- late rows in DEFAULT when the table has no retention (NULL: 30 days).
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.10'" to load this file. \quit

ALTER TABLE @extschema@.partheal_config ADD COLUMN drain_reach interval;

-- A function's result type cannot change in place: each form is dropped and
-- made again, with its comment. The text form calls the other two, so it
-- goes first and comes back last.
DROP FUNCTION @extschema@.partheal_manage(regclass, text, integer, interval, boolean, text, boolean);
DROP FUNCTION @extschema@.partheal_manage(regclass, bigint, integer, boolean, integer, bigint, boolean);
DROP FUNCTION @extschema@.partheal_manage(regclass, interval, integer, interval, boolean, text, boolean);

CREATE FUNCTION @extschema@.partheal_manage(parent regclass, partition_size bigint,
                                            mark_percent integer DEFAULT 80,
                                            nextval_default boolean DEFAULT NULL,
                                            premake integer DEFAULT 4,
                                            retention bigint DEFAULT NULL,
                                            retention_keep_table boolean DEFAULT NULL)
  RETURNS text LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_manage';
COMMENT ON FUNCTION @extschema@.partheal_manage(regclass, bigint, integer, boolean, integer, bigint, boolean) IS
  'register a RANGE(id)-partitioned table whose id comes from a sequence; the caller must own it. '
  'The next partition is created once ids reach mark_percent of the current one; NULL turns '
  'create-ahead off for the table. nextval_default installs partheal_nextval as the id default, '
  'so plain INSERT and COPY rows check the mark too. At least premake partitions are kept ahead '
  'of the sequence, made before this returns. With retention, partitions ending at or below the '
  'highest id the rows hold minus retention ids are detached and dropped (kept, with '
  'retention_keep_table; NULL: as registered, else false). Returns how the table is managed, '
  'the partitions made and what retention will remove';

CREATE FUNCTION @extschema@.partheal_manage(parent regclass, partition_interval interval,
                                            premake integer DEFAULT 4,
                                            retention interval DEFAULT NULL,
                                            retention_keep_table boolean DEFAULT NULL,
                                            time_zone text DEFAULT 'UTC',
                                            drain_default boolean DEFAULT NULL,
                                            drain_reach interval DEFAULT NULL)
  RETURNS text LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_manage_time';
COMMENT ON FUNCTION @extschema@.partheal_manage(regclass, interval, integer, interval, boolean, text, boolean, interval) IS
  'register a table partitioned by RANGE on a timestamptz, timestamp or date column; the caller '
  'must own it. Windows are calendar days, weeks or months local to time_zone, or fixed lengths '
  'under a day aligned to the Unix epoch; the window holding now() and premake after it are kept, '
  'made before this returns. With drain_default (NULL: as registered before, else true), the '
  'worker moves rows a DEFAULT partition holds into their windows and keeps windows ahead past '
  'it, making windows for late rows back to the retention horizon, or without retention back to '
  'now() - drain_reach (NULL: as registered before, else 30 days; 1,000 windows at most). Returns '
  'how the table is managed, the windows made and what retention will remove';

CREATE FUNCTION @extschema@.partheal_manage(parent regclass, partition text,
                                            premake integer DEFAULT NULL,
                                            retention interval DEFAULT NULL,
                                            retention_keep_table boolean DEFAULT NULL,
                                            time_zone text DEFAULT NULL,
                                            drain_default boolean DEFAULT NULL,
                                            drain_reach interval DEFAULT NULL)
  RETURNS text LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  window_length pg_catalog.interval;
BEGIN
  IF partition OPERATOR(pg_catalog.~) '^\s*[0-9]+\s*$' THEN
    IF premake IS NOT NULL OR retention IS NOT NULL OR retention_keep_table IS NOT NULL
       OR time_zone IS NOT NULL OR drain_default IS NOT NULL OR drain_reach IS NOT NULL THEN
      RAISE EXCEPTION 'partheal_manage got the partition size % as text, with other arguments', partition
        USING ERRCODE = '22023',
              HINT = pg_catalog.format('Write the size as a number: partheal_manage(%L, %s, ...).',
                                       parent::pg_catalog.text, pg_catalog.btrim(partition));
    END IF;
    RETURN @extschema@.partheal_manage(parent, partition::pg_catalog.int8);
  END IF;
  BEGIN
    window_length := partition::pg_catalog.interval;
  EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow THEN
    RAISE EXCEPTION 'partheal_manage''s second argument, "%", is neither a partition size nor a window length', partition
      USING ERRCODE = '22007',
            HINT = 'Give a number of ids (partheal_manage(''t'', 100000)) or an interval '
                   '(partheal_manage(''t'', interval ''1 day'')).';
  END;
  RETURN @extschema@.partheal_manage(parent, window_length,
                                     premake => COALESCE(premake, 4),
                                     retention => retention,
                                     retention_keep_table => retention_keep_table,
                                     time_zone => COALESCE(time_zone, 'UTC'),
                                     drain_default => drain_default,
                                     drain_reach => drain_reach);
END
$$;
COMMENT ON FUNCTION @extschema@.partheal_manage(regclass, text, integer, interval, boolean, text, boolean, interval) IS
  'partheal_manage with an untyped second argument: a number registers an id-keyed table (with no '
  'other argument), an interval a time-keyed one, with the interval form''s other arguments';
