-- partheal 0.9: partheal_manage with an untyped window length takes the
-- time form's other arguments too, so the natural
-- partheal_manage('events', '1 day', 4) and
-- partheal_manage('events', '1 day', premake => 2) register a time-keyed
-- table instead of failing to read '1 day' as a bigint.
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.9'" to load this file. \quit

-- A second argument with no type yet ('1 day', '100000', a psql :'var')
-- fits both typed forms. PostgreSQL prefers a text parameter for it over
-- both, so this form takes it, with the interval form's arguments (the
-- third, as there, is premake): a window length goes to the interval form;
-- a number to the id form, alone, since the id form's third argument is
-- mark_percent and a quoted number with more arguments is no natural call.
DROP FUNCTION @extschema@.partheal_manage(regclass, text);
CREATE FUNCTION @extschema@.partheal_manage(parent regclass, partition text,
                                            premake integer DEFAULT NULL,
                                            retention interval DEFAULT NULL,
                                            retention_keep_table boolean DEFAULT NULL,
                                            time_zone text DEFAULT NULL,
                                            drain_default boolean DEFAULT NULL)
  RETURNS void LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  window_length pg_catalog.interval;
BEGIN
  IF partition OPERATOR(pg_catalog.~) '^\s*[0-9]+\s*$' THEN
    IF premake IS NOT NULL OR retention IS NOT NULL OR retention_keep_table IS NOT NULL
       OR time_zone IS NOT NULL OR drain_default IS NOT NULL THEN
      RAISE EXCEPTION 'partheal_manage got the partition size % as text, with other arguments', partition
        USING ERRCODE = '22023',
              HINT = pg_catalog.format('Write the size as a number: partheal_manage(%L, %s, ...).',
                                       parent::pg_catalog.text, pg_catalog.btrim(partition));
    END IF;
    PERFORM @extschema@.partheal_manage(parent, partition::pg_catalog.int8);
    RETURN;
  END IF;
  BEGIN
    window_length := partition::pg_catalog.interval;
  EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow THEN
    RAISE EXCEPTION 'partheal_manage''s second argument, "%", is neither a partition size nor a window length', partition
      USING ERRCODE = '22007',
            HINT = 'Give a number of ids (partheal_manage(''t'', 100000)) or an interval '
                   '(partheal_manage(''t'', interval ''1 day'')).';
  END;
  PERFORM @extschema@.partheal_manage(parent, window_length,
                                      premake => COALESCE(premake, 4),
                                      retention => retention,
                                      retention_keep_table => retention_keep_table,
                                      time_zone => COALESCE(time_zone, 'UTC'),
                                      drain_default => drain_default);
END
$$;
COMMENT ON FUNCTION @extschema@.partheal_manage(regclass, text, integer, interval, boolean, text, boolean) IS
  'partheal_manage with an untyped second argument: a number registers an id-keyed table (with no '
  'other argument), an interval a time-keyed one, with the interval form''s other arguments';
