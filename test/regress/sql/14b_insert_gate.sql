-- The insert gate (issue 37): a plain INSERT into a managed table whose
-- partition is missing makes it and lands in the same statement, in every
-- statement form; what the gate leaves alone; its errors; EXPLAIN.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
CREATE FUNCTION parts(p regclass) RETURNS TABLE (name name, bound text)
  LANGUAGE sql AS $$
  SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent = p ORDER BY c.relname COLLATE "C" $$;
-- Rows per partition.
CREATE FUNCTION spread(p regclass) RETURNS TABLE (part text, n bigint)
  LANGUAGE plpgsql AS $$
  BEGIN
    RETURN QUERY EXECUTE format(
      'SELECT tableoid::regclass::text, count(*) FROM %s GROUP BY 1 ORDER BY 1', p);
  END $$;

-- Ids: partitions of 10, create-ahead off, none made ahead.
CREATE TABLE g (id bigserial PRIMARY KEY, v text) PARTITION BY RANGE (id);
SELECT partheal_manage('g', 10, NULL, premake => 0);
SELECT count(*) AS partitions FROM parts('g');
-- A single VALUES with a bigserial, RETURNING the partition it went to.
INSERT INTO g (v) VALUES ('one') RETURNING id, tableoid::regclass;
-- An explicit id, far from the sequence (the owner may).
INSERT INTO g (id, v) VALUES (95, 'explicit') RETURNING id, tableoid::regclass;
-- Multi-row VALUES straddling boundaries: ids 2 to 25 in one statement.
INSERT INTO g (v) VALUES ('a'), ('b'), ('c'), ('d'), ('e'), ('f'), ('g'), ('h'), ('i'), ('j'),
  ('k'), ('l'), ('m'), ('n'), ('o'), ('p'), ('q'), ('r'), ('s'), ('t'), ('u'), ('v'), ('w'), ('x');
-- INSERT ... SELECT across several missing partitions at once.
INSERT INTO g (id, v) SELECT i, 'sel' FROM generate_series(40, 75) i;
SELECT * FROM spread('g');
SELECT * FROM parts('g');
-- A dropped column: ModifyTable wants a NULL constant for it, which the gate
-- passes on; the partitions made LIKE the parent have no such column, so
-- routing converts the row.
CREATE TABLE dc (id bigserial, gone int, v text) PARTITION BY RANGE (id);
SELECT partheal_manage('dc', 10, NULL, premake => 0);
ALTER TABLE dc DROP COLUMN gone;
ALTER TABLE dc ADD COLUMN twice text GENERATED ALWAYS AS (v || v) STORED;
INSERT INTO dc (v) VALUES ('a') RETURNING *, tableoid::regclass;
INSERT INTO dc (id, v) SELECT i, 'b' FROM generate_series(12, 23, 11) i RETURNING *, tableoid::regclass;
EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO dc (v) VALUES ('c');
-- ON CONFLICT DO NOTHING and DO UPDATE, into a missing partition and then
-- onto the rows there.
INSERT INTO g (id, v) VALUES (105, 'new') ON CONFLICT (id) DO NOTHING RETURNING tableoid::regclass;
INSERT INTO g (id, v) VALUES (105, 'again') ON CONFLICT (id) DO NOTHING RETURNING tableoid::regclass;
INSERT INTO g (id, v) VALUES (115, 'up') ON CONFLICT (id) DO UPDATE SET v = 'updated'
  RETURNING id, v, tableoid::regclass;
INSERT INTO g (id, v) VALUES (115, 'up') ON CONFLICT (id) DO UPDATE SET v = 'updated twice'
  RETURNING id, v, tableoid::regclass;
-- An INSERT in a CTE, and one in a CTE under an INSERT.
WITH ins AS (INSERT INTO g (id, v) VALUES (125, 'cte') RETURNING id, tableoid::regclass AS part)
SELECT * FROM ins;
WITH ins AS (INSERT INTO g (id, v) VALUES (135, 'cte1') RETURNING id)
INSERT INTO g (id, v) SELECT id + 10, 'cte2' FROM ins RETURNING id, tableoid::regclass;
-- Prepared statements, under a generic and a custom plan.
PREPARE put (bigint) AS INSERT INTO g (id, v) VALUES ($1, 'prepared') RETURNING tableoid::regclass;
SET plan_cache_mode = force_generic_plan;
EXECUTE put(155);
EXECUTE put(165);
SET plan_cache_mode = force_custom_plan;
EXECUTE put(175);
RESET plan_cache_mode;
DEALLOCATE put;
-- plpgsql and SQL functions that insert.
CREATE FUNCTION put_pl(i bigint) RETURNS regclass LANGUAGE plpgsql AS $$
  DECLARE r regclass;
  BEGIN
    INSERT INTO g (id, v) VALUES (i, 'plpgsql') RETURNING tableoid::regclass INTO r;
    RETURN r;
  END $$;
CREATE FUNCTION put_sql(i bigint) RETURNS regclass LANGUAGE sql AS $$
  INSERT INTO g (id, v) VALUES (i, 'sql') RETURNING tableoid::regclass $$;
SELECT put_pl(185), put_pl(186), put_sql(195);
SELECT heals, insert_heals FROM partheal_stats WHERE parent = 'g'::regclass;

-- A cached generic plan made before the table was registered picks the
-- gate up: registration invalidates the table's plans.
CREATE TABLE late (id bigserial, v text) PARTITION BY RANGE (id);
CREATE TABLE late_p0 PARTITION OF late FOR VALUES FROM (0) TO (10);
PREPARE put_late (bigint) AS INSERT INTO late VALUES ($1, 'x') RETURNING tableoid::regclass;
SET plan_cache_mode = force_generic_plan;
EXECUTE put_late(1);
EXECUTE put_late(15);
SELECT partheal_manage('late', 10, NULL, premake => 0);
EXECUTE put_late(15);
-- Unregistered again, the plan loses it.
SELECT partheal_unmanage('late');
EXECUTE put_late(25);
RESET plan_cache_mode;
DEALLOCATE put_late;

-- partheal.heal_inserts = off: the row gets PostgreSQL's own error. The
-- setting is read when a row misses, so a plan cached under one value
-- obeys the other.
PREPARE put_sw (bigint) AS INSERT INTO g (id, v) VALUES ($1, 'switch') RETURNING tableoid::regclass;
SET plan_cache_mode = force_generic_plan;
EXECUTE put_sw(215);
SET partheal.heal_inserts = off;
INSERT INTO g (id, v) VALUES (205, 'off');
EXECUTE put_sw(225);
RESET partheal.heal_inserts;
EXECUTE put_sw(225);
RESET plan_cache_mode;
DEALLOCATE put_sw;
INSERT INTO g (id, v) VALUES (205, 'on') RETURNING tableoid::regclass;
-- A transaction that holds a lock the worker's ATTACH needs: PH004 at once,
-- as for partheal_append, and nothing made.
BEGIN;
LOCK TABLE g IN SHARE UPDATE EXCLUSIVE MODE;
\set VERBOSITY verbose
INSERT INTO g (id, v) VALUES (1005, 'locked');
\set VERBOSITY default
ROLLBACK;
SELECT to_regclass('g_p1000') AS locked_partition;

-- EXPLAIN: one line under the INSERT; EXPLAIN ANALYZE counts the heals.
EXPLAIN (COSTS OFF) INSERT INTO g (v) VALUES ('x');
EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO g (id, v) VALUES (1, 'x');
-- (Its lines without the actual row counts, which 18 prints with decimals.)
CREATE FUNCTION analyzed(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
    RETURN NEXT regexp_replace(l, ' \(actual rows=.*\)$', '');
  END LOOP;
END $$;
SELECT analyzed($$INSERT INTO g (id, v) SELECT i, 'explain' FROM generate_series(300, 325) i$$);
-- A single-row VALUES is computed by the gate itself, in its Result's
-- place (above: no Result under it); a scalar subquery in it still runs.
INSERT INTO g (id, v) VALUES ((SELECT max(id) + 500 FROM g WHERE id < 400), 'sub')
  RETURNING id, tableoid::regclass;
-- A table partheal does not manage has no gate.
CREATE TABLE gate_plain (id bigserial, v text) PARTITION BY RANGE (id);
EXPLAIN (COSTS OFF) INSERT INTO gate_plain VALUES (1, 'x');

-- Triggers: a BEFORE ROW trigger on the partitions that changes the key
-- routes by the key the row arrived with (PostgreSQL then checks the
-- partition's bound); AFTER ROW triggers and transition tables see each
-- row once.
CREATE TABLE tr (id bigserial, v text) PARTITION BY RANGE (id);
SELECT partheal_manage('tr', 10, NULL, premake => 0);
CREATE TABLE tr_log (what text, id bigint);
CREATE FUNCTION tr_before() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN NEW.id := NEW.id + NEW.v::int; RETURN NEW; END $$;
CREATE FUNCTION tr_after() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN INSERT INTO tr_log VALUES ('row', NEW.id); RETURN NULL; END $$;
CREATE FUNCTION tr_statement() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN INSERT INTO tr_log SELECT 'statement', count(*) FROM new_rows; RETURN NULL; END $$;
CREATE TRIGGER tr_before BEFORE INSERT ON tr FOR EACH ROW EXECUTE FUNCTION tr_before();
CREATE TRIGGER tr_after AFTER INSERT ON tr FOR EACH ROW EXECUTE FUNCTION tr_after();
CREATE TRIGGER tr_statement AFTER INSERT ON tr REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION tr_statement();
INSERT INTO tr VALUES (1, '1'), (12, '2'), (25, '0'), (38, '1') RETURNING id, tableoid::regclass;
SELECT * FROM tr_log ORDER BY what, id;
-- A BEFORE trigger that moves the key out of the partition the row was
-- routed to: PostgreSQL's own error, and nothing inserted.
INSERT INTO tr VALUES (45, '9');
SELECT count(*) FROM tr;

-- A foreign-key child of the table, and the table as a foreign-key child.
CREATE TABLE fk_parent (id bigserial PRIMARY KEY, v text) PARTITION BY RANGE (id);
SELECT partheal_manage('fk_parent', 10, NULL, premake => 0);
CREATE TABLE fk_child (parent_id bigint REFERENCES fk_parent (id), note text);
INSERT INTO fk_parent VALUES (3, 'p'), (13, 'p') RETURNING tableoid::regclass;
INSERT INTO fk_child VALUES (13, 'ok');
CREATE TABLE kinds (kind text PRIMARY KEY);
INSERT INTO kinds VALUES ('a');
CREATE TABLE fk_refs (id bigserial, kind text REFERENCES kinds) PARTITION BY RANGE (id);
SELECT partheal_manage('fk_refs', 10, NULL, premake => 0);
INSERT INTO fk_refs VALUES (1, 'a'), (11, 'a') RETURNING tableoid::regclass;
INSERT INTO fk_refs VALUES (21, 'missing');
SELECT * FROM parts('fk_refs');

-- A time key whose default calls a volatile function: the key it gives,
-- row by row, is the key the gate checks.
CREATE SEQUENCE vol_seq;
CREATE FUNCTION next_day() RETURNS timestamptz LANGUAGE sql VOLATILE AS
  $$ SELECT timestamptz '2021-01-01 12:00+00' + nextval('vol_seq') * interval '1 day' $$;
CREATE TABLE vol (at timestamptz DEFAULT next_day(), v text) PARTITION BY RANGE (at);
SELECT partheal_manage('vol', interval '1 day', premake => 0) IS NOT NULL AS managed;
INSERT INTO vol (v) SELECT 'v' FROM generate_series(1, 3) RETURNING at, tableoid::regclass;

-- Row-level security WITH CHECK: a row the policy refuses is refused after
-- the gate made its partition (partitions outlive the statement, as with
-- partheal_append); a row it accepts lands.
CREATE TABLE rls (id bigserial, owner_name text) PARTITION BY RANGE (id);
SELECT partheal_manage('rls', 10, NULL, premake => 0);
ALTER TABLE rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON rls FOR ALL USING (owner_name = current_user)
  WITH CHECK (owner_name = current_user);
CREATE ROLE gate_writer;
GRANT INSERT, SELECT ON rls, g TO gate_writer;
GRANT USAGE ON SEQUENCE g_id_seq, rls_id_seq TO gate_writer;
SET ROLE gate_writer;
INSERT INTO rls VALUES (5, 'gate_writer');
INSERT INTO rls VALUES (15, 'someone else');
RESET ROLE;
SELECT id, owner_name, tableoid::regclass FROM rls;

-- A non-owner: ids the sequence draws heal; an id far from the sequence
-- gets partheal_append's 42501, and nothing is made.
SET ROLE gate_writer;
INSERT INTO g (v) VALUES ('writer') RETURNING tableoid::regclass;
\set VERBOSITY verbose
INSERT INTO g (id, v) VALUES (100000, 'far');
\set VERBOSITY default
RESET ROLE;
SELECT to_regclass('g_p100000') AS far_partition;
-- A SECURITY DEFINER function of the owner's, fed a far-off id by a role
-- that does not own the table: judged as that role (42501, nothing made);
-- called by the owner, it heals.
CREATE FUNCTION put_as_owner(i bigint) RETURNS regclass LANGUAGE sql SECURITY DEFINER AS $$
  INSERT INTO g (id, v) VALUES (i, 'definer') RETURNING tableoid::regclass $$;
GRANT EXECUTE ON FUNCTION put_as_owner(bigint) TO gate_writer;
SET ROLE gate_writer;
SELECT put_as_owner(200005);
RESET ROLE;
SELECT to_regclass('g_p200000') AS far_partition;
SELECT put_as_owner(200005);

-- A NULL key: partheal's error, with the row's number, not PostgreSQL's
-- "no partition".
\set VERBOSITY verbose
INSERT INTO g (id, v) VALUES (27, 'ok'), (NULL, 'null');
\set VERBOSITY default

-- Time keys: a window is made for the row's time, given or from now().
CREATE TABLE ts (at timestamptz NOT NULL DEFAULT now(), v text) PARTITION BY RANGE (at);
SELECT partheal_manage('ts', interval '1 day', premake => 0) IS NOT NULL AS managed;
GRANT INSERT, SELECT ON ts TO gate_writer;
INSERT INTO ts VALUES ('2020-03-01 10:00+00', 'old'), ('2020-03-02 23:59+00', 'older')
  RETURNING at, tableoid::regclass;
INSERT INTO ts (v) VALUES ('now') RETURNING tableoid::regclass = (
  SELECT c.oid FROM pg_class c WHERE c.relname = 'ts_p' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD'))
  AS in_todays_window;
-- A non-owner's key far from now: 42501, nothing made.
SET ROLE gate_writer;
INSERT INTO ts VALUES ('2019-06-01', 'far');
RESET ROLE;
SELECT count(*) AS far_windows FROM parts('ts') WHERE name LIKE 'ts_p2019%';
-- Infinity has no window.
INSERT INTO ts VALUES ('infinity', 'never');
-- Past the retention: PH005, nothing made.
CREATE TABLE tret (at timestamptz NOT NULL, v text) PARTITION BY RANGE (at);
SELECT partheal_manage('tret', interval '1 day', premake => 0, retention => interval '30 days') IS NOT NULL AS managed;
-- (The message has the time in it: its SQLSTATE and start are shown.)
DO $$
BEGIN
  INSERT INTO tret VALUES (now() - interval '90 days', 'expired');
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE '% %', SQLSTATE, substring(SQLERRM FROM '^"at" [^ ]+ [^ ]+ of "tret" is older than the table''s retention$') IS NOT NULL;
END $$;
SELECT count(*) AS windows_before_horizon FROM parts('tret')
 WHERE substring(bound FROM 'TO \(''([^'']+)')::timestamptz < now() - interval '30 days';

-- A DEFAULT partition takes the row, a NULL key too: the gate makes
-- nothing under a statement that holds the DEFAULT (the worker's drain
-- moves the rows later).
CREATE TABLE wd (at timestamptz, v text) PARTITION BY RANGE (at);
CREATE TABLE wd_default PARTITION OF wd DEFAULT;
SELECT partheal_manage('wd', interval '1 day', premake => 0) IS NOT NULL AS managed;
INSERT INTO wd VALUES ('2020-05-05', 'a'), (NULL, 'null key') RETURNING tableoid::regclass;
SELECT count(*) AS windows_of_2020 FROM parts('wd') WHERE name LIKE 'wd_p2020%';
SELECT insert_heals FROM partheal_stats WHERE parent = 'wd'::regclass;

-- A sub-partitioned managed table: the gate heals its top level; a row
-- that reaches a partitioned partition with no sub-partition for it gets
-- PostgreSQL's own error there.
CREATE TABLE sub (id bigserial, k int, v text) PARTITION BY RANGE (id);
CREATE TABLE sub_p0 PARTITION OF sub FOR VALUES FROM (0) TO (10) PARTITION BY LIST (k);
CREATE TABLE sub_p0_k1 PARTITION OF sub_p0 FOR VALUES IN (1);
SELECT partheal_manage('sub', 10, NULL, premake => 0);
INSERT INTO sub VALUES (1, 1, 'leaf'), (15, 2, 'healed') RETURNING tableoid::regclass;
INSERT INTO sub VALUES (2, 2, 'no sub-partition');

-- UPDATE that moves a row to a missing partition, and MERGE ... INSERT:
-- ModifyTable routes those rows itself, with nothing under it that sees
-- the new key. partheal's own error says so (SQLSTATE 23514, as
-- PostgreSQL's), with PostgreSQL's detail; nothing is made.
\set VERBOSITY verbose
UPDATE g SET id = 990 WHERE id = 1;
MERGE INTO g USING (VALUES (880::bigint)) s(id) ON g.id = s.id
  WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 'merge');
\set VERBOSITY default
-- A move into a partition that exists is PostgreSQL's as ever; a table
-- partheal does not manage keeps PostgreSQL's error.
UPDATE g SET id = 28 WHERE id = 1 RETURNING id, tableoid::regclass;
INSERT INTO gate_plain VALUES (1, 'x');
SELECT to_regclass('g_p990') AS update_partition, to_regclass('g_p880') AS merge_partition;

-- A registration whose table changed since (its id default dropped): an
-- INSERT whose partition exists is planned and runs as ever (planning reads
-- only whether the table is registered); only a miss reads the table's
-- shape, and says what is wrong with it.
CREATE TABLE nodef (id bigserial, v text) PARTITION BY RANGE (id);
CREATE TABLE nodef_p0 PARTITION OF nodef FOR VALUES FROM (0) TO (10);
SELECT partheal_manage('nodef', 10, NULL, premake => 0);
ALTER TABLE nodef ALTER COLUMN id DROP DEFAULT;
INSERT INTO nodef VALUES (1, 'fits') RETURNING tableoid::regclass;
INSERT INTO nodef VALUES (15, 'misses');

-- COPY is not gated: partheal_reserve is its way.
COPY g (id, v) FROM STDIN;
770	copy
\.

DROP TABLE g, dc, nodef, late, gate_plain, tr, tr_log, fk_child, fk_parent, fk_refs, kinds, vol, rls, ts, tret, wd, sub;
DROP SEQUENCE vol_seq;
DROP FUNCTION parts(regclass), spread(regclass), put_pl(bigint), put_sql(bigint), tr_before(),
  tr_after(), tr_statement(), next_day(), analyzed(text), put_as_owner(bigint);
DROP ROLE gate_writer;
