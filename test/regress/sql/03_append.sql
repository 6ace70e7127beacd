-- Create-ahead is off for these tables (mark_percent NULL): the partitions
-- listed are the heal's alone. 07_ahead covers create-ahead.
-- partheal_append: the API, its three paths, and every kind of bad input.
CREATE TABLE msg (
  id      bigserial,
  body    text NOT NULL DEFAULT 'empty',
  payload jsonb,
  n       int,
  price   numeric(6,2),
  flag    boolean
) PARTITION BY RANGE (id);
CREATE INDEX msg_body ON msg (body);
SELECT partheal_manage('msg', 10, NULL);
CREATE VIEW parts AS
  SELECT i.inhparent::regclass AS parent, c.relname AS partition,
         pg_get_expr(c.relpartbound, c.oid) AS bound, pg_get_userbyid(c.relowner) AS owner
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   ORDER BY c.relname COLLATE "C";
-- What partheal_manage says, with the windows it made masked: which
-- windows a time-keyed registration makes, and how many, depends on the
-- time of day the test runs (12_time on; 008_plain_writers.pl reads them).
CREATE FUNCTION undated(said text) RETURNS text LANGUAGE sql
  AS $$ SELECT regexp_replace(said, 'made [^;]*window[^;]*', 'made <the windows around now()>') $$;

-- The table starts with no partition at all.
SELECT * FROM parts WHERE parent = 'msg'::regclass;

-- Single row: the missing partition is created, the row lands, its id comes back.
SELECT * FROM partheal_append('msg', '{"body": "first"}');
SELECT * FROM parts WHERE parent = 'msg'::regclass;
-- The partition was made LIKE the parent: it has the parent's index.
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'msg_p0'::regclass;

-- Batch: one statement, ids in input order, straddling two missing partitions.
SELECT * FROM partheal_append('msg', (SELECT jsonb_agg(jsonb_build_object('n', g)) FROM generate_series(1, 24) g));
SELECT * FROM parts WHERE parent = 'msg'::regclass;
SELECT count(*), min(id), max(id), count(DISTINCT tableoid) FROM msg;

-- Keys: a column no row names takes its default; a column some rows name is
-- NULL in the others; values convert as the column's input function would.
SELECT * FROM partheal_append('msg', '[{"n": 1, "price": 2.5, "flag": true, "payload": {"a": [1, 2]}},
                                       {"payload": "just a string"},
                                       {"n": "42", "price": "3.14159", "flag": "off", "payload": null}]');
SELECT id, body, payload, n, price, flag FROM msg WHERE id > 25 ORDER BY id;

-- In a transaction: many calls, then ROLLBACK. The rows go; the partitions
-- the worker made stay, committed on their own.
BEGIN;
SELECT * FROM partheal_append('msg', '{"body": "in tx 1"}');
SELECT * FROM partheal_append('msg', (SELECT jsonb_agg(jsonb_build_object('n', g)) FROM generate_series(1, 12) g));
SELECT * FROM partheal_append('msg', '{"body": "in tx 3"}');
ROLLBACK;
SELECT * FROM parts WHERE parent = 'msg'::regclass;
SELECT count(*) FROM msg WHERE id > 28;
-- ... and with COMMIT everything lands.
BEGIN;
SELECT count(*) FROM partheal_append('msg', (SELECT jsonb_agg(jsonb_build_object('n', g)) FROM generate_series(1, 15) g));
SELECT * FROM partheal_append('msg', '{"body": "after the batch"}');
COMMIT;
SELECT count(*), max(id) FROM msg;

-- From a procedure that commits and rolls back between calls.
CREATE PROCEDURE append_some() LANGUAGE plpgsql AS $$
BEGIN
  PERFORM partheal_append('msg', '{"body": "kept"}');
  COMMIT;
  PERFORM partheal_append('msg', (SELECT jsonb_agg(jsonb_build_object('body', 'dropped')) FROM generate_series(1, 20)));
  ROLLBACK;
  PERFORM partheal_append('msg', '{"body": "kept too"}');
END $$;
CALL append_some();
SELECT body, count(*) FROM msg WHERE body IN ('kept', 'kept too', 'dropped') GROUP BY body ORDER BY body;
SELECT * FROM parts WHERE parent = 'msg'::regclass;

-- An id a row gives is used as it is, and its partition healed like any other.
SELECT * FROM partheal_append('msg', '{"id": 1005, "body": "given"}');
SELECT * FROM partheal_append('msg', '{"id": -7, "body": "below zero"}');
SELECT * FROM parts WHERE parent = 'msg'::regclass AND partition IN ('msg_p1000', 'msg_pm10');

\set VERBOSITY verbose
-- Bad input: a clear error, and nothing inserted, drawn or created.
SELECT last_value FROM msg_id_seq;
SELECT count(*) AS rows_before FROM msg \gset
SELECT * FROM partheal_append('msg', '{"nope": 1}');
SELECT * FROM partheal_append('msg', '[{"n": 1}, {"n": 2, "also_nope": 3}]');
SELECT * FROM partheal_append('msg', '[]');
SELECT * FROM partheal_append('msg', '7');
SELECT * FROM partheal_append('msg', '"a string"');
SELECT * FROM partheal_append('msg', 'null');
SELECT * FROM partheal_append('msg', '[{"n": 1}, 2]');
SELECT * FROM partheal_append('msg', '[{"n": 1}, [3]]');
SELECT * FROM partheal_append('msg', NULL);
SELECT * FROM partheal_append(NULL, '{}');
SELECT * FROM partheal_append('msg', '{"id": null}');
\set VERBOSITY default
-- A bad value fails with its type's own error.
SELECT * FROM partheal_append('msg', '[{"n": 1}, {"n": "twelve"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_append('msg', '{"price": 123456.5}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_append('msg', '{"body": null}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_append('msg', '[{"body": "x"}, {"n": 3}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_append('msg', '{"flag": "maybe"}');
SELECT last_value FROM msg_id_seq;
SELECT count(*) = :rows_before AS nothing_inserted FROM msg;
SELECT count(*) AS partitions FROM parts WHERE parent = 'msg'::regclass;

-- A table partheal does not manage.
CREATE TABLE unmanaged (id bigserial) PARTITION BY RANGE (id);
\set VERBOSITY verbose
SELECT * FROM partheal_append('unmanaged', '{}');
\set VERBOSITY default
SELECT * FROM partheal_append('pg_class', '{}');

-- Identity columns: GENERATED ALWAYS draws like INSERT, and refuses a given id as INSERT does.
CREATE TABLE ident (id int GENERATED ALWAYS AS IDENTITY, v text) PARTITION BY RANGE (id);
SELECT partheal_manage('ident', 3, NULL);
SELECT * FROM partheal_append('ident', '[{"v": "a"}, {"v": "b"}, {"v": "c"}, {"v": "d"}]');
SELECT * FROM parts WHERE parent = 'ident'::regclass;
\set VERBOSITY verbose
SELECT * FROM partheal_append('ident', '{"id": 9, "v": "x"}');
\set VERBOSITY default

-- The caller needs INSERT on the table, as with INSERT; and with serial the
-- caller needs USAGE on the sequence, as with INSERT.
CREATE ROLE appender;
SET ROLE appender;
SELECT * FROM partheal_append('msg', '{}');
RESET ROLE;
GRANT INSERT ON msg TO appender;
SET ROLE appender;
SELECT * FROM partheal_append('msg', '{}');
INSERT INTO msg DEFAULT VALUES;
RESET ROLE;
GRANT USAGE ON SEQUENCE msg_id_seq TO appender;
SET ROLE appender;
-- A role that does not own the table has partitions made for the ids it
-- gives only near the sequence position: spaced-out explicit ids cannot
-- grow the catalog without bound (42501, nothing created).
SELECT * FROM partheal_append('msg', '{"id": 2000, "body": "by appender"}');
SELECT * FROM partheal_append('msg', '[{"id": 1}, {"id": -500}]');
RESET ROLE;
SELECT count(*) AS far_partitions FROM parts WHERE partition IN ('msg_p2000', 'msg_pm500');
-- One partition past the position is within reach, and a partition the
-- appender makes is still owned by the table's owner.
SELECT last_value + 10 AS near FROM msg_id_seq \gset
SET ROLE appender;
SELECT count(*) FROM partheal_append('msg', jsonb_build_object('id', :near, 'body', 'by appender'));
RESET ROLE;
SELECT pg_get_userbyid(c.relowner) = current_user AS owned_by_table_owner
  FROM msg m JOIN pg_class c ON c.oid = m.tableoid WHERE m.id = :near;
-- The owner is not limited.
SELECT * FROM partheal_append('msg', '{"id": 2000, "body": "by the owner"}');
DROP TABLE msg_p2000;

-- Triggers and defaults see the session's search_path, as with INSERT.
CREATE SCHEMA app;
CREATE TABLE app.audit (id bigint, note text);
CREATE FUNCTION app.note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO audit VALUES (NEW.id, 'seen'); RETURN NEW; END $$;
CREATE TRIGGER note AFTER INSERT ON msg FOR EACH ROW EXECUTE FUNCTION app.note();
SET search_path = app, public;
SELECT * FROM partheal_append('msg', '{"id": 2001}');
RESET search_path;
SELECT * FROM app.audit;
DROP TRIGGER note ON msg;

-- A READ ONLY transaction is refused before anything is created: a heal's
-- partition, committed by the worker, would outlive the refused INSERT.
BEGIN TRANSACTION READ ONLY;
SELECT * FROM partheal_append('msg', '{"id": 3005}');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT count(*) AS msg_p3000_created FROM pg_class WHERE relname = 'msg_p3000';

-- The ids returned are the ids stored, as INSERT ... RETURNING says: a
-- BEFORE trigger may change an id, or skip a row.
CREATE TABLE shifted (id bigserial, v int) PARTITION BY RANGE (id);
SELECT partheal_manage('shifted', 100, NULL);
CREATE FUNCTION shift_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.v = 0 THEN RETURN NULL; END IF;
  NEW.id := NEW.id + 10;
  RETURN NEW;
END $$;
CREATE TRIGGER shift BEFORE INSERT ON shifted FOR EACH ROW EXECUTE FUNCTION shift_id();
SELECT * FROM partheal_append('shifted', '{"v": 1}');
SELECT * FROM partheal_append('shifted', '[{"v": 2}, {"v": 0}, {"v": 3}]');
SELECT id, v FROM shifted ORDER BY id;
DROP TABLE shifted;
DROP FUNCTION shift_id();
-- RETURNING needs SELECT on the id, as in SQL: a role with INSERT alone gets
-- the ids it drew, and never reads what a trigger stored.
CREATE TABLE shifted2 (id bigserial, v int) PARTITION BY RANGE (id);
SELECT partheal_manage('shifted2', 100, NULL);
CREATE FUNCTION shift_id2() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.id := NEW.id + 10; RETURN NEW; END $$;
CREATE TRIGGER shift BEFORE INSERT ON shifted2 FOR EACH ROW EXECUTE FUNCTION shift_id2();
GRANT INSERT ON shifted2 TO appender;
GRANT USAGE ON SEQUENCE shifted2_id_seq TO appender;
SET ROLE appender;
SELECT * FROM partheal_append('shifted2', '[{"v": 1}, {"v": 2}]');
RESET ROLE;
GRANT SELECT (id) ON shifted2 TO appender;
SET ROLE appender;
SELECT * FROM partheal_append('shifted2', '{"v": 3}');
RESET ROLE;
SELECT id, v FROM shifted2 ORDER BY id;
-- Under row-level security RETURNING would add the SELECT policies as
-- checks a plain INSERT does not make: the caller gets the ids it drew.
ALTER TABLE shifted2 ENABLE ROW LEVEL SECURITY;
CREATE POLICY add_any ON shifted2 FOR INSERT WITH CHECK (true);
CREATE POLICY see_none ON shifted2 FOR SELECT USING (false);
SET ROLE appender;
INSERT INTO shifted2 (v) VALUES (4);
SELECT * FROM partheal_append('shifted2', '{"v": 5}');
RESET ROLE;
SELECT id, v FROM shifted2 WHERE v >= 4 ORDER BY id;
DROP TABLE shifted2;
DROP FUNCTION shift_id2();

-- Column-level INSERT grants work as with INSERT, except that partheal's
-- INSERT always names the id column (it draws the ids itself): a role needs
-- INSERT on the id column too.
CREATE ROLE col_writer;
CREATE ROLE col_body_only;
GRANT INSERT (id, body) ON msg TO col_writer;
GRANT INSERT (body) ON msg TO col_body_only;
GRANT USAGE, SELECT ON SEQUENCE msg_id_seq TO col_writer, col_body_only;
SET ROLE col_writer;
SELECT count(*) FROM partheal_append('msg', '{"body": "by column grant"}');
SELECT * FROM partheal_append('msg', '{"body": "x", "n": 1}');
RESET ROLE;
SET ROLE col_body_only;
INSERT INTO msg (body) VALUES ('plain insert, body only');
SELECT last_value AS seq_before FROM msg_id_seq \gset
SELECT * FROM partheal_append('msg', '{"body": "x"}');
SELECT last_value = :seq_before AS no_id_drawn FROM msg_id_seq;
RESET ROLE;
DELETE FROM msg WHERE body IN ('by column grant', 'plain insert, body only');
REVOKE ALL ON msg FROM col_writer, col_body_only;
REVOKE ALL ON SEQUENCE msg_id_seq FROM col_writer, col_body_only;
DROP ROLE col_writer, col_body_only;
