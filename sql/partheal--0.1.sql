-- partheal 0.1: heal missing id-range partitions on append, inside the backend.
\echo Use "CREATE EXTENSION partheal" to load this file. \quit

-- First: refuse to install where the library was not preloaded, with a HINT
-- that names the setting.
CREATE FUNCTION @extschema@.partheal_require_preload() RETURNS void
  LANGUAGE c AS 'MODULE_PATHNAME', 'partheal_require_preload';
SELECT @extschema@.partheal_require_preload();

-- One row per managed table. pg_dump dumps the rows with the extension.
CREATE TABLE @extschema@.partheal_config (
  parent         regclass PRIMARY KEY,
  partition_size bigint   NOT NULL CHECK (partition_size > 0)
);
SELECT pg_catalog.pg_extension_config_dump('@extschema@.partheal_config', '');
REVOKE ALL ON @extschema@.partheal_config FROM PUBLIC;
GRANT SELECT ON @extschema@.partheal_config TO PUBLIC;

CREATE FUNCTION @extschema@.partheal_manage(parent regclass, partition_size bigint)
  RETURNS void LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_manage';
COMMENT ON FUNCTION @extschema@.partheal_manage(regclass, bigint) IS
  'register a RANGE(id)-partitioned table whose id comes from a sequence; the caller must own it';

CREATE FUNCTION @extschema@.partheal_unmanage(parent regclass)
  RETURNS void LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_unmanage';
COMMENT ON FUNCTION @extschema@.partheal_unmanage(regclass) IS 'remove a table''s registration';

CREATE FUNCTION @extschema@.partheal_append(parent regclass, rows jsonb)
  RETURNS SETOF bigint LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_append';
COMMENT ON FUNCTION @extschema@.partheal_append(regclass, jsonb) IS
  'insert one JSON object or an array of objects, creating missing partitions; returns the ids';

-- Internal: proves in tests that C++ exceptions become errors. Not for users.
CREATE FUNCTION @extschema@.partheal_boundary_selftest(kind text)
  RETURNS void LANGUAGE c STRICT AS 'MODULE_PATHNAME', 'partheal_boundary_selftest';
REVOKE ALL ON FUNCTION @extschema@.partheal_boundary_selftest(text) FROM PUBLIC;

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
