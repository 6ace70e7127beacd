-- The bad-input matrix (issue 9, section 3): every SQL function partheal
-- exposes, every argument. Each bad call gets a specific SQLSTATE and leaves
-- the database as it was.
--
-- sqlstate_of(sql) runs one call in a subtransaction and prints
-- 'SQLSTATE: message' (or 'ok'), with no LOCATION or CONTEXT lines. It also
-- takes db_state() (every relation of schema bad and of this session's temp
-- schema with its bounds, row count or sequence position, the id defaults,
-- and every partheal_config row) before and after the call, and appends
-- ' -- CHANGED ...' with the difference if the call changed anything: an
-- orphan partition, a registration, a drawn id, a landed row. Partitions the
-- worker makes are committed by the worker, so a rollback cannot hide them.
-- Each section also compares the state before and after it in one SELECT.
--
-- Every table is registered with mark_percent NULL, so the worker never
-- creates anything here on its own, and the state only changes by the calls.
\set VERBOSITY terse
CREATE SCHEMA bad;

CREATE FUNCTION bad.db_state() RETURNS text
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  r record;
  n bigint;
  s text;
  out text := '';
BEGIN
  FOR r IN SELECT c.oid, c.relname, c.relkind, pg_get_expr(c.relpartbound, c.oid) AS bound
             FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
            WHERE ns.nspname = 'bad' OR c.relnamespace = pg_my_temp_schema()
            ORDER BY c.relname LOOP
    out := out || format('rel %s %s %s', r.relname, r.relkind, coalesce(r.bound, '-'));
    IF r.relkind = 'r' THEN
      EXECUTE format('SELECT count(*) FROM %s', r.oid::regclass) INTO n;
      out := out || ' rows ' || n;
    ELSIF r.relkind = 'S' THEN
      EXECUTE format('SELECT last_value || '' '' || is_called FROM %s', r.oid::regclass) INTO s;
      out := out || ' seq ' || s;
    END IF;
    out := out || E'\n';
  END LOOP;
  FOR r IN SELECT c.relname, a.attname, pg_get_expr(d.adbin, d.adrelid) AS def
             FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid
             JOIN pg_namespace ns ON ns.oid = c.relnamespace
             JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
            WHERE ns.nspname = 'bad' OR c.relnamespace = pg_my_temp_schema()
            ORDER BY 1, 2 LOOP
    out := out || format(E'default %s.%s %s\n', r.relname, r.attname, r.def);
  END LOOP;
  FOR r IN SELECT CASE WHEN c.relnamespace = pg_my_temp_schema() THEN 'pg_temp' ELSE ns.nspname END
                  || '.' || c.relname AS parent, p.partition_size, p.mark_percent
             FROM public.partheal_config p JOIN pg_class c ON c.oid = p.parent::oid
             JOIN pg_namespace ns ON ns.oid = c.relnamespace
            ORDER BY 1 LOOP
    out := out || format(E'config %s %s %s\n', r.parent, r.partition_size,
                         coalesce(r.mark_percent::text, 'NULL'));
  END LOOP;
  RETURN out;
END $$;

-- The lines of the state now that differ from `before`: + new, - gone.
CREATE FUNCTION bad.state_changes(before text) RETURNS text[]
  LANGUAGE sql AS $$
  SELECT coalesce(array_agg(change ORDER BY change), '{}') FROM (
    (SELECT '+ ' || l AS change FROM unnest(string_to_array(bad.db_state(), E'\n')) l
     EXCEPT SELECT '+ ' || l FROM unnest(string_to_array(before, E'\n')) l)
    UNION ALL
    (SELECT '- ' || l FROM unnest(string_to_array(before, E'\n')) l
     EXCEPT SELECT '- ' || l FROM unnest(string_to_array(bad.db_state(), E'\n')) l)) d
$$;

CREATE FUNCTION bad.sqlstate_of(sql text, check_state boolean DEFAULT true) RETURNS text
  LANGUAGE plpgsql AS $$
DECLARE
  before text;
  result text;
BEGIN
  IF check_state THEN before := bad.db_state(); END IF;
  BEGIN
    EXECUTE sql;
    result := 'ok';
  EXCEPTION WHEN OTHERS THEN
    result := SQLSTATE || ': ' || SQLERRM;
  END;
  IF check_state AND bad.db_state() IS DISTINCT FROM before THEN
    result := result || ' -- CHANGED ' || array_to_string(bad.state_changes(before), ', ');
  END IF;
  RETURN result;
END $$;

-- A call as printed: long ones (the deep nesting) shortened.
CREATE FUNCTION bad.label(call text) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN length(call) <= 100 THEN call
              ELSE left(call, 60) || format('... (%s characters)', length(call)) END
$$;

-- The partitions of a table: name, bounds and rows.
CREATE FUNCTION bad.parts(parent regclass) RETURNS TABLE (part name, bounds text, row_count bigint)
  LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.oid, c.relname, pg_get_expr(c.relpartbound, c.oid) AS b
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = parent ORDER BY c.relname LOOP
    part := r.relname;
    bounds := r.b;
    EXECUTE format('SELECT count(*) FROM %s', r.oid::regclass) INTO row_count;
    RETURN NEXT;
  END LOOP;
END $$;

-- The tables. Managed ones have create-ahead off (mark_percent NULL).
CREATE TABLE bad.a (id bigserial, v text, n int, j jsonb, b boolean, ts timestamptz)
  PARTITION BY RANGE (id);
CREATE TABLE bad.a_p0 PARTITION OF bad.a FOR VALUES FROM (0) TO (1000);
SELECT partheal_manage('bad.a', 1000, NULL);
CREATE TABLE bad.ident (id bigint GENERATED ALWAYS AS IDENTITY, v text) PARTITION BY RANGE (id);
SELECT partheal_manage('bad.ident', 1000, NULL);
CREATE TABLE bad.unreg (id bigserial, v text) PARTITION BY RANGE (id);   -- never registered
CREATE TABLE bad.by_list (id bigserial, k int) PARTITION BY LIST (k);
CREATE TABLE bad.by_hash (id bigserial) PARTITION BY HASH (id);
-- Multi-level: ml's first partition is sub-partitioned by LIST, ml2's by
-- RANGE (id) again. The top levels are manageable; a middle level is a
-- partition, not a table of its own: partheal would make partitions for it
-- outside its own bounds.
CREATE TABLE bad.ml (id bigserial, k int NOT NULL DEFAULT 1) PARTITION BY RANGE (id);
CREATE TABLE bad.ml_p0 PARTITION OF bad.ml FOR VALUES FROM (0) TO (100) PARTITION BY LIST (k);
CREATE TABLE bad.ml_p0_k1 PARTITION OF bad.ml_p0 FOR VALUES IN (1);
SELECT partheal_manage('bad.ml', 100, NULL);
CREATE TABLE bad.ml2 (id bigserial, v text) PARTITION BY RANGE (id);
CREATE TABLE bad.ml2_p0 PARTITION OF bad.ml2 FOR VALUES FROM (0) TO (100) PARTITION BY RANGE (id);
CREATE TABLE bad.ml2_p0_0 PARTITION OF bad.ml2_p0 FOR VALUES FROM (0) TO (50);
CREATE VIEW bad.v AS SELECT * FROM bad.a;
-- A foreign table needs no extension: a wrapper without a handler will do.
CREATE FOREIGN DATA WRAPPER regress_bad_fdw;
CREATE SERVER regress_bad_srv FOREIGN DATA WRAPPER regress_bad_fdw;
CREATE FOREIGN TABLE bad.ft (id bigserial, v text) SERVER regress_bad_srv;
CREATE TEMP TABLE tt (id bigserial, v text) PARTITION BY RANGE (id);
-- Shapes partheal_manage refuses.
CREATE TABLE bad.with_default (id bigserial) PARTITION BY RANGE (id);
CREATE TABLE bad.with_default_d PARTITION OF bad.with_default DEFAULT;
CREATE SEQUENCE bad.down_seq INCREMENT -1;
CREATE TABLE bad.down (id bigint DEFAULT nextval('bad.down_seq')) PARTITION BY RANGE (id);
CREATE SEQUENCE bad.num_seq;
CREATE TABLE bad.num_key (id numeric DEFAULT nextval('bad.num_seq')) PARTITION BY RANGE (id);
CREATE TABLE bad.no_seq (id bigint) PARTITION BY RANGE (id);
CREATE TABLE bad.two_cols (id bigserial, k int) PARTITION BY RANGE (id, k);
-- For the attach and the drain: an integer key with a DEFAULT holding rows,
-- a time key, a date key and a text key.
CREATE TABLE bad.win (id bigint, v text) PARTITION BY RANGE (id);
CREATE TABLE bad.win_p0 PARTITION OF bad.win FOR VALUES FROM (0) TO (100);
CREATE TABLE bad.win_d PARTITION OF bad.win DEFAULT;
INSERT INTO bad.win VALUES (5, 'in win_p0'), (150, 'in DEFAULT');
CREATE TABLE bad.stamps (ts timestamptz) PARTITION BY RANGE (ts);
CREATE TABLE bad.days (d date) PARTITION BY RANGE (d);
CREATE TABLE bad.texts (k text) PARTITION BY RANGE (k);
-- Roles: one with INSERT on bad.a (and USAGE on its sequence), one with nothing.
CREATE ROLE regress_bad_writer;
CREATE ROLE regress_bad_nobody;
GRANT USAGE ON SCHEMA bad TO regress_bad_writer, regress_bad_nobody;
GRANT INSERT ON bad.a TO regress_bad_writer;
GRANT USAGE ON SEQUENCE bad.a_id_seq TO regress_bad_writer;

SELECT bad.db_state() AS before_all \gset

-- partheal_append(parent, rows)
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  -- NULLs.
  ($$SELECT partheal_append(NULL, '{}')$$),
  ($$SELECT partheal_append('bad.a', NULL)$$),
  ($$SELECT partheal_append(NULL, NULL)$$),
  -- Relations that are not a registered table.
  ($$SELECT partheal_append(4294967295::oid::regclass, '{}')$$),
  ($$SELECT partheal_append('bad.unreg', '{}')$$),
  ($$SELECT partheal_append('bad.v', '{}')$$),
  ($$SELECT partheal_append('bad.ft', '{}')$$),
  ($$SELECT partheal_append('tt', '{}')$$),
  ($$SELECT partheal_append('bad.a_p0', '{}')$$),
  ($$SELECT partheal_append('bad.by_list', '{"k": 1}')$$),
  ($$SELECT partheal_append('bad.by_hash', '{}')$$),
  ($$SELECT partheal_append('bad.ml_p0', '{}')$$),
  ($$SELECT partheal_append('bad.ml2_p0', '{}')$$),
  ($$SELECT partheal_append('bad.a_id_seq', '{}')$$),
  -- Shapes of rows.
  ($$SELECT partheal_append('bad.a', '1')$$),
  ($$SELECT partheal_append('bad.a', '"text"')$$),
  ($$SELECT partheal_append('bad.a', 'true')$$),
  ($$SELECT partheal_append('bad.a', 'null')$$),
  ($$SELECT partheal_append('bad.a', '[]')$$),
  ($$SELECT partheal_append('bad.a', '[1, 2]')$$),
  ($$SELECT partheal_append('bad.a', '[{}, "x"]')$$),
  ($$SELECT partheal_append('bad.a', '[{}, null]')$$),
  ($$SELECT partheal_append('bad.a', '[[{}]]')$$),
  ($$SELECT partheal_append('bad.a', '[{}, [{}]]')$$),
  -- Unknown keys (column names are case-sensitive).
  ($$SELECT partheal_append('bad.a', '{"nope": 1}')$$),
  ($$SELECT partheal_append('bad.a', '[{"v": "x"}, {"nope": 1}]')$$),
  ($$SELECT partheal_append('bad.a', '{"V": "x"}')$$),
  ($$SELECT partheal_append('bad.a', '{"": 1}')$$),
  ($$SELECT partheal_append('bad.a', '{"tableoid": 1}')$$),
  -- Wrong value types: each type's own error.
  ($$SELECT partheal_append('bad.a', '{"n": "abc"}')$$),
  ($$SELECT partheal_append('bad.a', '{"n": 99999999999}')$$),
  ($$SELECT partheal_append('bad.a', '{"n": true}')$$),
  ($$SELECT partheal_append('bad.a', '{"n": {"x": 1}}')$$),
  ($$SELECT partheal_append('bad.a', '{"b": "maybe"}')$$),
  ($$SELECT partheal_append('bad.a', '{"ts": "not a time"}')$$),
  ($$SELECT partheal_append('bad.a', '[{"v": "fine"}, {"ts": 5}]')$$),
  ($$SELECT partheal_append('bad.a', '{"id": "abc"}')$$),
  ($$SELECT partheal_append('bad.a', '{"id": false}')$$),
  ($$SELECT partheal_append('bad.a', '{"id": 9223372036854775808}')$$),
  ($$SELECT partheal_append('bad.a', '{"id": -9223372036854775809}')$$),
  -- GENERATED ALWAYS: refused as INSERT refuses it, alone and in a batch.
  ($$SELECT partheal_append('bad.ident', '{"id": 5}')$$),
  ($$SELECT partheal_append('bad.ident', '[{"v": "x"}, {"id": 5}]')$$),
  -- Deep nesting: 100,000 levels pass PostgreSQL's own jsonb parse limit
  -- (before partheal is called); 10,000-level arrays and objects as rows are
  -- a non-object element and an unknown key.
  (format('SELECT partheal_append(%L, %L)', 'bad.a',
          '{"j": ' || repeat('{"a": ', 100000) || '1' || repeat('}', 100000) || '}')),
  (format('SELECT partheal_append(%L, %L)', 'bad.a', repeat('[', 10000) || repeat(']', 10000))),
  (format('SELECT partheal_append(%L, %L)', 'bad.a',
          repeat('{"a": ', 10000) || '1' || repeat('}', 10000)))
) AS c(call);

-- A heal is needed (no partition for id 5000) while this transaction holds
-- a lock the partition's ATTACH would wait for: PH004 at once.
BEGIN;
LOCK TABLE bad.a IN SHARE UPDATE EXCLUSIVE MODE;
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  ($$SELECT partheal_append('bad.a', '{"id": 5000}')$$),
  ($$SELECT partheal_reserve('bad.a', 5000)$$)
) AS c(call);
ROLLBACK;

-- A READ ONLY transaction: refused before anything is created.
BEGIN READ ONLY;
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  ($$SELECT partheal_append('bad.a', '{"id": 5000}')$$),
  ($$SELECT partheal_append('bad.a', '{}')$$),
  ($$SELECT partheal_reserve('bad.a', 5000)$$),
  ($$SELECT partheal_nextval('bad.a', 'bad.a_id_seq')$$),
  ($$SELECT partheal_manage('bad.unreg', 10, NULL)$$),
  ($$SELECT partheal_unmanage('bad.a')$$),
  ($$SELECT partheal_attach_window('bad.win', '100', '200')$$),
  ($$CALL partheal_partition_data('bad.win', '100')$$)
) AS c(call);
ROLLBACK;

-- partheal_reserve(parent, ids)
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  ($$SELECT partheal_reserve(NULL, 10)$$),
  ($$SELECT partheal_reserve('bad.a', NULL)$$),
  ($$SELECT partheal_reserve('bad.a', 0)$$),
  ($$SELECT partheal_reserve('bad.a', -1)$$),
  ($$SELECT partheal_reserve('bad.a', -9223372036854775808)$$),
  ($$SELECT partheal_reserve('bad.a', '9223372036854775808')$$),
  ($$SELECT partheal_reserve('bad.a', 9223372036854775807)$$),
  ($$SELECT partheal_reserve('bad.a', 10000001)$$),
  ($$SELECT partheal_reserve(4294967295::oid::regclass, 10)$$),
  ($$SELECT partheal_reserve('bad.unreg', 10)$$),
  ($$SELECT partheal_reserve('bad.v', 10)$$),
  ($$SELECT partheal_reserve('bad.ft', 10)$$),
  ($$SELECT partheal_reserve('tt', 10)$$),
  ($$SELECT partheal_reserve('bad.a_p0', 10)$$),
  ($$SELECT partheal_reserve('bad.by_list', 10)$$),
  ($$SELECT partheal_reserve('bad.by_hash', 10)$$),
  ($$SELECT partheal_reserve('bad.ml_p0', 10)$$)
) AS c(call);

-- partheal_nextval(parent, sequence). On a table that is not registered it
-- is a plain nextval (documented), so only these are bad calls.
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  ($$SELECT partheal_nextval(NULL, 'bad.a_id_seq')$$),
  ($$SELECT partheal_nextval('bad.a', NULL)$$),
  ($$SELECT partheal_nextval('bad.a', 'bad.unreg_id_seq')$$),
  ($$SELECT partheal_nextval('bad.a', 'bad.a')$$),
  ($$SELECT partheal_nextval('bad.a', 'bad.v')$$),
  ($$SELECT partheal_nextval('bad.a', 4294967295::oid::regclass)$$),
  ($$SELECT partheal_nextval(4294967295::oid::regclass, 'bad.a_id_seq')$$)
) AS c(call);

-- partheal_unmanage(parent)
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  ($$SELECT partheal_unmanage(NULL)$$),
  ($$SELECT partheal_unmanage(4294967295::oid::regclass)$$),
  ($$SELECT partheal_unmanage('bad.unreg')$$),
  ($$SELECT partheal_unmanage('bad.v')$$),
  ($$SELECT partheal_unmanage('bad.ft')$$),
  ($$SELECT partheal_unmanage('tt')$$),
  ($$SELECT partheal_unmanage('bad.a_p0')$$),
  ($$SELECT partheal_unmanage('bad.by_list')$$),
  ($$SELECT partheal_unmanage('bad.ml_p0')$$)
) AS c(call);

-- partheal_attach_window(parent, lower, upper, partition_name)
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  ($$SELECT partheal_attach_window(NULL, '100', '200')$$),
  ($$SELECT partheal_attach_window('bad.win', NULL, '200')$$),
  ($$SELECT partheal_attach_window('bad.win', '100', NULL)$$),
  ($$SELECT partheal_attach_window(4294967295::oid::regclass, '100', '200')$$),
  ($$SELECT partheal_attach_window('bad.v', '100', '200')$$),
  ($$SELECT partheal_attach_window('bad.ft', '100', '200')$$),
  ($$SELECT partheal_attach_window('tt', '100', '200')$$),
  ($$SELECT partheal_attach_window('bad.win_p0', '100', '200')$$),
  ($$SELECT partheal_attach_window('bad.by_list', '100', '200')$$),
  ($$SELECT partheal_attach_window('bad.by_hash', '100', '200')$$),
  ($$SELECT partheal_attach_window('bad.ml_p0', '100', '200')$$),
  ($$SELECT partheal_attach_window('bad.win', '200', '200')$$),
  ($$SELECT partheal_attach_window('bad.win', '200', '100')$$),
  ($$SELECT partheal_attach_window('bad.win', 'abc', '200')$$),
  ($$SELECT partheal_attach_window('bad.win', '100', '9223372036854775808')$$),
  ($$SELECT partheal_attach_window('bad.win', '-9223372036854775809', '0')$$),
  ($$SELECT partheal_attach_window('bad.win', '50', '150')$$),
  ($$SELECT partheal_attach_window('bad.win', '-100', '1')$$),
  ($$SELECT partheal_attach_window('bad.win', '100', '200', repeat('x', 64))$$),
  ($$SELECT partheal_attach_window('bad.win', '100', '200', '')$$),
  ($$SELECT partheal_attach_window('bad.stamps', 'not a time', '2026-01-01')$$),
  ($$SELECT partheal_attach_window('bad.stamps', '2026-02-01', '2026-01-01')$$)
) AS c(call);

-- partheal_partition_data(parent, window_size, batch_rows)
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  ($$CALL partheal_partition_data(NULL, '100')$$),
  ($$CALL partheal_partition_data('bad.win', NULL)$$),
  ($$CALL partheal_partition_data('bad.win', '100', 0)$$),
  ($$CALL partheal_partition_data('bad.win', '100', -1)$$),
  ($$CALL partheal_partition_data('bad.win', '0')$$),
  ($$CALL partheal_partition_data('bad.win', '-100')$$),
  ($$CALL partheal_partition_data('bad.win', 'ten')$$),
  ($$CALL partheal_partition_data('bad.win', '1e3')$$),
  ($$CALL partheal_partition_data('bad.win', '1 month')$$),
  ($$CALL partheal_partition_data('bad.win', '99999999999999999999')$$),
  ($$CALL partheal_partition_data('bad.stamps', '0 days')$$),
  ($$CALL partheal_partition_data('bad.stamps', '-1 day')$$),
  ($$CALL partheal_partition_data('bad.stamps', '1 month 2 days')$$),
  ($$CALL partheal_partition_data('bad.stamps', 'a fortnight')$$),
  ($$CALL partheal_partition_data('bad.days', '6 hours')$$),
  ($$CALL partheal_partition_data('bad.texts', '1')$$),
  ($$CALL partheal_partition_data(4294967295::oid::regclass, '100')$$),
  ($$CALL partheal_partition_data('bad.v', '100')$$),
  ($$CALL partheal_partition_data('bad.ft', '100')$$),
  ($$CALL partheal_partition_data('tt', '100')$$),
  ($$CALL partheal_partition_data('bad.win_p0', '100')$$),
  ($$CALL partheal_partition_data('bad.by_list', '100')$$),
  ($$CALL partheal_partition_data('bad.by_hash', '100')$$),
  ($$CALL partheal_partition_data('bad.ml_p0', '100')$$)
) AS c(call);

-- NULLs that mean the default are not bad calls: a NULL mark_percent turns
-- create-ahead off, a NULL nextval_default leaves the id default alone, a
-- NULL batch_rows is 50000 (bad.stamps has no DEFAULT: nothing to drain). A
-- NULL partition_name is the generated name, shown in 09_attach.
SELECT call, bad.sqlstate_of(call) AS result FROM (VALUES
  ($$SELECT partheal_manage('bad.a', 1000, NULL, NULL)$$),
  ($$CALL partheal_partition_data('bad.stamps', '1 day', NULL)$$)
) AS c(call);

-- Other roles: privileges come before any input is looked at.
SET ROLE regress_bad_writer;
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  ($$SELECT partheal_manage('bad.a', 10, NULL)$$),
  ($$SELECT partheal_unmanage('bad.a')$$),
  ($$SELECT partheal_reserve('bad.a', 100000)$$),
  ($$SELECT partheal_append('bad.ident', '{}')$$),
  ($$SELECT partheal_reserve('bad.ident', 1)$$),
  ($$SELECT partheal_nextval('bad.ident', 'bad.ident_id_seq')$$),
  ($$SELECT partheal_attach_window('bad.win', '100', '200')$$),
  ($$CALL partheal_partition_data('bad.win', '100')$$)
) AS c(call);
RESET ROLE;
SET ROLE regress_bad_nobody;
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  ($$SELECT partheal_append('bad.a', '{}')$$),
  ($$SELECT partheal_append('bad.a', '{"nope": 1}')$$),
  ($$SELECT partheal_append('bad.a', 'null')$$),
  ($$SELECT partheal_reserve('bad.a', 1)$$),
  ($$SELECT partheal_nextval('bad.a', 'bad.a_id_seq')$$)
) AS c(call);
RESET ROLE;

-- partheal_manage(parent, partition_size, mark_percent, nextval_default).
-- Bad sizes and marks go to bad.a, which is registered: its registration
-- must stay as it is.
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  -- NULLs (a NULL mark_percent or nextval_default is valid: create-ahead
  -- off, and the id default left as it is).
  ($$SELECT partheal_manage(NULL, 10)$$),
  ($$SELECT partheal_manage('bad.a', NULL::bigint)$$),
  ($$SELECT partheal_manage(NULL, NULL::bigint, NULL, NULL)$$),
  -- Sizes: zero, negative, the most negative, past bigint.
  ($$SELECT partheal_manage('bad.a', 0, NULL)$$),
  ($$SELECT partheal_manage('bad.a', -1, NULL)$$),
  ($$SELECT partheal_manage('bad.a', -9223372036854775808, NULL)$$),
  ($$SELECT partheal_manage('bad.a', '9223372036854775808'::bigint, NULL)$$),
  -- Marks outside 1 to 99.
  ($$SELECT partheal_manage('bad.a', 1000, 0)$$),
  ($$SELECT partheal_manage('bad.a', 1000, 100)$$),
  ($$SELECT partheal_manage('bad.a', 1000, -1)$$),
  -- Retentions that are not positive.
  ($$SELECT partheal_manage('bad.a', 1000, NULL, retention => 0)$$),
  ($$SELECT partheal_manage('bad.a', 1000, NULL, retention => -1)$$),
  -- Relations that are not a manageable table.
  ($$SELECT partheal_manage(4294967295::oid::regclass, 10, NULL)$$),
  ($$SELECT partheal_manage('bad.nope', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.v', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.ft', 10, NULL)$$),
  ($$SELECT partheal_manage('tt', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.a_p0', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.a_id_seq', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.by_list', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.by_hash', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.ml_p0', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.ml2_p0', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.two_cols', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.num_key', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.no_seq', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.with_default', 10, NULL)$$),
  ($$SELECT partheal_manage('bad.down', 10, NULL)$$),
  -- nextval_default on an identity column.
  ($$SELECT partheal_manage('bad.ident', 1000, NULL, true)$$)
) AS c(call);

-- Nothing above changed anything.
SELECT bad.db_state() = :'before_all' AS unchanged, bad.state_changes(:'before_all') AS changes;
SELECT parent, partition_size, mark_percent FROM partheal_config
 WHERE parent::oid IN ('bad.a'::regclass, 'bad.ident'::regclass, 'bad.ml'::regclass)
 ORDER BY parent::text;

-- Multi-level: the top of a sub-partitioned table is manageable, and a heal
-- beside the sub-partitioned partition makes a plain one.
SELECT * FROM partheal_append('bad.ml', '{"id": 150}');
SELECT * FROM bad.parts('bad.ml');

-- Sizes that are valid. Huge: 9223372036854775807 ids a partition, on a
-- smallint and a bigint key; the ranges are cut to MINVALUE/MAXVALUE at the
-- key type's limits.
CREATE TABLE bad.huge16 (id smallserial) PARTITION BY RANGE (id);
CREATE TABLE bad.huge64 (id bigserial) PARTITION BY RANGE (id);
SELECT partheal_manage('bad.huge16', 9223372036854775807, NULL);
SELECT partheal_manage('bad.huge64', 9223372036854775807, NULL);
SELECT * FROM partheal_append('bad.huge16', '[{}, {"id": -32768}, {"id": 32767}]');
SELECT * FROM bad.parts('bad.huge16');
SELECT * FROM partheal_append('bad.huge64',
  '[{}, {"id": -1}, {"id": -9223372036854775808}, {"id": 9223372036854775807}]');
SELECT * FROM bad.parts('bad.huge64');
-- One id a partition: every id its own partition, by append and by reserve.
CREATE TABLE bad.one (id bigserial, v text) PARTITION BY RANGE (id);
SELECT partheal_manage('bad.one', 1, NULL);
SELECT * FROM partheal_append('bad.one', '[{"v": "a"}, {"v": "b"}, {"v": "c"}, {"id": 0}, {"id": -1}]');
SELECT partheal_reserve('bad.one', 2);
SELECT * FROM bad.parts('bad.one');

-- Ids at each key type's limits: explicit ids at both ends land, one past
-- them is the type's own 22003; a sequence at its end is nextval's 2200H.
CREATE TABLE bad.k16 (id smallserial) PARTITION BY RANGE (id);
CREATE TABLE bad.k32 (id serial) PARTITION BY RANGE (id);
CREATE TABLE bad.k64 (id bigserial) PARTITION BY RANGE (id);
SELECT partheal_manage('bad.k16', 100, NULL);
SELECT partheal_manage('bad.k32', 1000, NULL);
SELECT partheal_manage('bad.k64', 1000, NULL);
SELECT * FROM partheal_append('bad.k16', '[{"id": 32767}, {"id": -32768}]');
SELECT * FROM partheal_append('bad.k32', '[{"id": 2147483647}, {"id": -2147483648}]');
SELECT * FROM partheal_append('bad.k64', '[{"id": 9223372036854775807}, {"id": -9223372036854775808}]');
SELECT * FROM bad.parts('bad.k16');
SELECT * FROM bad.parts('bad.k32');
SELECT * FROM bad.parts('bad.k64');
SELECT setval('bad.k16_id_seq', 32766);
SELECT * FROM partheal_append('bad.k16', '{}');
SELECT setval('bad.k64_id_seq', 9223372036854775806);
SELECT * FROM partheal_append('bad.k64', '{}');
SELECT bad.db_state() AS before_limits \gset
SELECT bad.label(call) AS call, bad.sqlstate_of(call) AS result FROM (VALUES
  ($$SELECT partheal_append('bad.k16', '{"id": 32768}')$$),
  ($$SELECT partheal_append('bad.k16', '{"id": -32769}')$$),
  ($$SELECT partheal_append('bad.k32', '{"id": 2147483648}')$$),
  ($$SELECT partheal_append('bad.k32', '[{"id": 1}, {"id": -2147483649}]')$$),
  ($$SELECT partheal_append('bad.k64', '{"id": 9223372036854775808}')$$),
  ($$SELECT partheal_append('bad.k64', '{"id": -9223372036854775809}')$$),
  ($$SELECT partheal_append('bad.k16', '{}')$$),
  ($$SELECT partheal_append('bad.k64', '{}')$$),
  ($$SELECT partheal_append('bad.k64', '[{"id": 5}, {}]')$$),
  ($$SELECT partheal_nextval('bad.k16', 'bad.k16_id_seq')$$)
) AS c(call);
-- Reserving past the end of the key creates nothing and returns 0.
SELECT partheal_reserve('bad.k16', 10);
SELECT partheal_reserve('bad.k64', 9223372036854775807);
SELECT bad.db_state() = :'before_limits' AS unchanged, bad.state_changes(:'before_limits') AS changes;
-- An integer key drawn from a bigint sequence: past the key's range the
-- draw fails as the column default would, with the id drawn, as a plain
-- INSERT draws it.
CREATE SEQUENCE bad.wide_seq AS bigint;
CREATE TABLE bad.narrow (id integer DEFAULT nextval('bad.wide_seq')) PARTITION BY RANGE (id);
SELECT partheal_manage('bad.narrow', 1000, NULL);
SELECT setval('bad.wide_seq', 2147483646);
SELECT * FROM partheal_append('bad.narrow', '{}');
SELECT bad.sqlstate_of($$SELECT partheal_append('bad.narrow', '{}')$$, false) AS append,
       bad.sqlstate_of($$INSERT INTO bad.narrow DEFAULT VALUES$$, false) AS plain_insert;
SELECT last_value FROM bad.wide_seq;
SELECT * FROM bad.parts('bad.narrow');

-- Deep nesting that jsonb takes: a 10,000-level object in a jsonb column,
-- and as the text of a text column.
SELECT * FROM partheal_append('bad.a',
  format('{"j": %s, "v": %s}', repeat('{"a": ', 10000) || '1' || repeat('}', 10000),
         to_jsonb(repeat('{"a": ', 10000) || '1' || repeat('}', 10000)))::jsonb);
SELECT id, length(j::text) AS j_length, j::text = repeat('{"a": ', 10000) || '1' || repeat('}', 10000) AS j_intact,
       length(v) AS v_length
  FROM bad.a;

-- 100,000 rows in one call. A valid batch lands whole; one with a bad row
-- at position 99,999 fails and lands nothing, before any id is drawn.
CREATE TABLE bad.big (id bigserial, n int CHECK (n >= 0), v text) PARTITION BY RANGE (id);
SELECT partheal_manage('bad.big', 1000000, NULL);
SELECT count(*) AS ids, min(ids) AS first, max(ids) AS last
  FROM partheal_append('bad.big', (SELECT jsonb_agg(jsonb_build_object('n', i, 'v', 'row ' || i))
                                     FROM generate_series(1, 100000) i)) AS ids;
SELECT count(*) AS rows, count(DISTINCT id) AS ids, min(id), max(id), sum(n) FROM bad.big;
SELECT bad.db_state() AS before_big \gset
SELECT bad.sqlstate_of(format('SELECT partheal_append(%L, %L)', 'bad.big',
         (SELECT jsonb_agg(CASE WHEN i = 99999 THEN jsonb_build_object('n', 'x')
                                ELSE jsonb_build_object('n', i) END)
            FROM generate_series(1, 100000) i))) AS bad_value_at_99999;
SELECT bad.sqlstate_of(format('SELECT partheal_append(%L, %L)', 'bad.big',
         (SELECT jsonb_agg(CASE WHEN i = 99999 THEN jsonb_build_object('nope', i)
                                ELSE jsonb_build_object('n', i) END)
            FROM generate_series(1, 100000) i))) AS unknown_key_at_99999;
SELECT bad.sqlstate_of(format('SELECT partheal_append(%L, %L)', 'bad.big',
         (SELECT jsonb_agg(CASE WHEN i = 99999 THEN to_jsonb(i)
                                ELSE jsonb_build_object('n', i) END)
            FROM generate_series(1, 100000) i))) AS scalar_at_99999;
SELECT bad.db_state() = :'before_big' AS unchanged, bad.state_changes(:'before_big') AS changes;
-- A row the INSERT itself refuses (a CHECK) at 99,999: the call lands
-- nothing. Its ids are drawn, as a plain INSERT draws them, and no
-- partition is made (they all fall in big_p0).
SELECT bad.sqlstate_of(format('SELECT partheal_append(%L, %L)', 'bad.big',
         (SELECT jsonb_agg(jsonb_build_object('n', CASE WHEN i = 99999 THEN -1 ELSE i END))
            FROM generate_series(1, 100000) i)), false) AS check_violation_at_99999;
SELECT count(*) AS rows FROM bad.big;
SELECT last_value FROM bad.big_id_seq;
SELECT * FROM bad.parts('bad.big');

-- Cleanup: everything this file made.
SET client_min_messages = warning;
DROP SCHEMA bad CASCADE;
DROP TABLE tt;
DROP SERVER regress_bad_srv;
DROP FOREIGN DATA WRAPPER regress_bad_fdw;
DROP ROLE regress_bad_writer, regress_bad_nobody;
RESET client_min_messages;
SELECT count(*) AS registrations_left FROM partheal_config c
  LEFT JOIN pg_class r ON r.oid = c.parent::oid WHERE r.oid IS NULL;
\set VERBOSITY default
