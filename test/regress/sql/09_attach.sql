-- partheal_attach_window and partheal_partition_data: every outcome, and
-- every bad input refused with its SQLSTATE and nothing changed.
\set VERBOSITY default
SET TimeZone = 'UTC';
CREATE FUNCTION tree(parent regclass) RETURNS TABLE (child regclass, bound text, rows bigint)
  LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.oid, pg_get_expr(c.relpartbound, c.oid) AS b FROM pg_inherits i
             JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = parent
            ORDER BY c.relname COLLATE "C" LOOP
    child := r.oid; bound := r.b;
    EXECUTE format('SELECT count(*) FROM %s', r.oid::regclass) INTO rows;
    RETURN NEXT;
  END LOOP;
END $$;

-- A table with no DEFAULT partition: the plain ATTACH, one attempt. The
-- table is created LIKE the parent and named after the lower bound.
CREATE TABLE tl (id bigserial, at timestamptz NOT NULL, v text,
                 doubled bigint GENERATED ALWAYS AS (id * 2) STORED) PARTITION BY RANGE (at);
CREATE INDEX ON tl (at);
SELECT * FROM partheal_attach_window('tl', '2026-01-01', '2026-02-01');
SELECT * FROM tree('tl');
-- The same window again changes nothing.
SELECT * FROM partheal_attach_window('tl', '2026-01-01 00:00+00', '2026-02-01');
-- The bounds are read under the caller's settings, like any timestamptz.
SET TimeZone = 'America/New_York';
SELECT * FROM partheal_attach_window('tl', '2026-02-01 00:00+00', '2026-03-01 00:00+00');
RESET TimeZone;
SET TimeZone = 'UTC';

-- A DEFAULT that holds nothing for the window: still one attempt.
CREATE TABLE tl_default PARTITION OF tl DEFAULT;

INSERT INTO tl (at, v) VALUES ('2025-06-01', 'old'), ('2026-05-15', 'may'), ('2026-05-20', 'may');
SELECT * FROM partheal_attach_window('tl', '2026-04-01', '2026-05-01');
-- A DEFAULT that holds rows of the window: they move, then the ATTACH. The
-- generated column is computed again, equal to what it was.
SELECT * FROM partheal_attach_window('tl', '2026-05-01', '2026-06-01', 'tl_may');
SELECT tableoid::regclass, at, v, doubled = id * 2 AS generated_ok FROM tl ORDER BY at, id;
-- A table the caller names that exists and is not attached is attached.
CREATE TABLE tl_june (LIKE tl INCLUDING ALL);
INSERT INTO tl_june (at, v) VALUES ('2026-06-10', 'june');
SELECT * FROM partheal_attach_window('tl', '2026-06-01', '2026-07-01', 'tl_june');
SELECT * FROM tree('tl');

-- Bad input: each refused, nothing changed.
SELECT * FROM partheal_attach_window('tl', 'soon', '2026-08-01');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_attach_window('tl', '2026-08-01', '2026-08-01');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_attach_window('tl', '2026-09-01', '2026-08-01');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_attach_window('tl', '2026-05-15', '2026-06-15');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_attach_window('tl', '2026-01-01', '2026-03-01');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_attach_window('tl', NULL, '2026-08-01');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_attach_window(NULL, '2026-07-01', '2026-08-01');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_attach_window('tl', '2026-07-01', '2026-08-01', repeat('x', 64));
\echo :LAST_ERROR_SQLSTATE
-- A partition of another table is not this window's table.
SELECT * FROM partheal_attach_window('tl', '2026-07-01', '2026-08-01', 'tl_may');
\echo :LAST_ERROR_SQLSTATE
-- A table holding rows outside the window gets PostgreSQL's own error.
CREATE TABLE tl_wrong (LIKE tl INCLUDING ALL);
INSERT INTO tl_wrong (at, v) VALUES ('2030-01-01', 'elsewhere');
SELECT * FROM partheal_attach_window('tl', '2026-07-01', '2026-08-01', 'tl_wrong');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE tl_wrong;
SELECT count(*) AS tables_named_tl FROM pg_class WHERE relname LIKE 'tl%' AND relkind = 'r';
-- Not a RANGE table on one column.
CREATE TABLE flat (at timestamptz);
SELECT * FROM partheal_attach_window('flat', '2026-01-01', '2026-02-01');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE listed (k int) PARTITION BY LIST (k);
SELECT * FROM partheal_attach_window('listed', '1', '2');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE two_cols (a int, b int) PARTITION BY RANGE (a, b);
SELECT * FROM partheal_attach_window('two_cols', '1', '2');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE by_expr (at timestamp) PARTITION BY RANGE ((at::date));
SELECT * FROM partheal_attach_window('by_expr', '2026-01-01', '2026-02-01');
\echo :LAST_ERROR_SQLSTATE

-- Only the owner, or a member of the owning role, may attach; what is
-- created belongs to the parent's owner even when a superuser calls.
CREATE ROLE attach_owner;
CREATE ROLE attach_member IN ROLE attach_owner;
CREATE ROLE attach_stranger;
CREATE TABLE owned (id int NOT NULL) PARTITION BY RANGE (id);
ALTER TABLE owned OWNER TO attach_owner;
GRANT SELECT, INSERT, UPDATE, DELETE ON owned TO attach_stranger;
SET ROLE attach_stranger;
SELECT * FROM partheal_attach_window('owned', '0', '10');
\echo :LAST_ERROR_SQLSTATE
-- partheal runs as the owner, with the owner's rights, not the caller's.
SET ROLE attach_member;
SELECT * FROM partheal_attach_window('owned', '0', '10');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT CREATE ON SCHEMA public TO attach_owner;
SET ROLE attach_member;
SELECT * FROM partheal_attach_window('owned', '0', '10');
RESET ROLE;
SELECT * FROM partheal_attach_window('owned', '10', '20');
-- A superuser caller lends partheal none of its rights.
REVOKE CREATE ON SCHEMA public FROM attach_owner;
SELECT * FROM partheal_attach_window('owned', '20', '30');
\echo :LAST_ERROR_SQLSTATE
GRANT CREATE ON SCHEMA public TO attach_owner;
SELECT c.relname, pg_get_userbyid(c.relowner) AS owner FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'owned'::regclass ORDER BY 1;

-- Integer, date, timestamp and text keys; a negative bound names "_pm".
CREATE TABLE nums (n int, v text) PARTITION BY RANGE (n);
CREATE TABLE nums_rest PARTITION OF nums DEFAULT;
INSERT INTO nums SELECT g, 'x' FROM generate_series(-15, 24) g;
SELECT * FROM partheal_attach_window('nums', '-10', '0');
SELECT * FROM partheal_attach_window('nums', '0', '10');
SELECT * FROM partheal_attach_window('nums', '1e3', '2000');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE days (d date NOT NULL) PARTITION BY RANGE (d);
SELECT * FROM partheal_attach_window('days', '2026-03-01', '2026-03-02');
-- A table that already has the generated name is not taken over unasked;
-- named, it is attached.
CREATE TABLE days_p20260401 (LIKE days);
SELECT * FROM partheal_attach_window('days', '2026-04-01', '2026-05-01');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_attach_window('days', '2026-04-01', '2026-05-01', 'days_p20260401');
-- A temporary table is refused.
CREATE TEMP TABLE scratch (k int) PARTITION BY RANGE (k);
SELECT * FROM partheal_attach_window('scratch', '1', '2');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE stamps (t timestamp(0) NOT NULL) PARTITION BY RANGE (t);
SELECT * FROM partheal_attach_window('stamps', '2026-03-01 06:00', '2026-03-01 12:00');
CREATE TABLE words (w text COLLATE "C" NOT NULL) PARTITION BY RANGE (w);
CREATE TABLE words_rest PARTITION OF words DEFAULT;
INSERT INTO words VALUES ('apple'), ('Banana'), ('melon'), ('zebra');
SELECT * FROM partheal_attach_window('words', 'a', 'n');
SELECT tableoid::regclass, w FROM words ORDER BY w;
SELECT * FROM tree('nums');

-- DEFAULT with its columns in another order and a dropped column: rows
-- move by name.
CREATE TABLE shuffled (a int NOT NULL, b text, c int) PARTITION BY RANGE (a);
CREATE TABLE shuffled_legacy (c int, junk int, b text, a int NOT NULL);
ALTER TABLE shuffled_legacy DROP COLUMN junk;
INSERT INTO shuffled_legacy (a, b, c) VALUES (1, 'one', 10), (5, 'five', 50), (50, 'fifty', 500);
ALTER TABLE shuffled ATTACH PARTITION shuffled_legacy DEFAULT;
SELECT * FROM partheal_attach_window('shuffled', '0', '10');
SELECT tableoid::regclass, a, b, c FROM shuffled ORDER BY a;

-- A DEFAULT that is a foreign table cannot be locked or moved out of: when
-- it holds rows of the window, the window stays in DEFAULT and a NOTICE
-- says why; nothing is created.
CREATE EXTENSION file_fdw;
CREATE SERVER files FOREIGN DATA WRAPPER file_fdw;
CREATE TABLE remote (k int NOT NULL, v text) PARTITION BY RANGE (k);
DO $$
BEGIN
  EXECUTE format('COPY (SELECT g, ''r'' FROM generate_series(1, 5) g) TO %L',
                 current_setting('data_directory') || '/partheal_remote.csv');
  EXECUTE format('CREATE FOREIGN TABLE remote_default (k int NOT NULL, v text) SERVER files '
                 'OPTIONS (filename %L)', current_setting('data_directory') || '/partheal_remote.csv');
END $$;
ALTER TABLE remote ATTACH PARTITION remote_default DEFAULT;
SELECT * FROM partheal_attach_window('remote', '0', '10');
SELECT * FROM partheal_attach_window('remote', '100', '200');
SELECT * FROM tree('remote');
-- Why partheal looks first: PostgreSQL's own ATTACH does not scan a foreign
-- DEFAULT, and would hide its rows of the window from queries that prune.
BEGIN;
CREATE TABLE remote_low (LIKE remote);
ALTER TABLE remote ATTACH PARTITION remote_low FOR VALUES FROM (0) TO (10);
SELECT count(*) AS rows_a_pruned_query_sees FROM remote WHERE k BETWEEN 1 AND 5;
ROLLBACK;

-- A partitioned DEFAULT: ATTACH's error names its leaf, which is still a
-- conflict with DEFAULT, reconciled the same way.
CREATE TABLE nested (id int, ts date NOT NULL) PARTITION BY RANGE (ts);
CREATE TABLE nested_default PARTITION OF nested DEFAULT PARTITION BY LIST (id);
CREATE TABLE nested_default_rest PARTITION OF nested_default DEFAULT;
INSERT INTO nested VALUES (1, '2026-01-05'), (2, '2027-01-01');
SELECT * FROM partheal_attach_window('nested', '2026-01-01', '2026-02-01');
SELECT tableoid::regclass, id, ts FROM nested ORDER BY id;

-- A table that foreign keys reference: moving rows would run their ON
-- DELETE actions, so a DEFAULT holding rows of the window stays as it is.
CREATE TABLE orders (id int NOT NULL, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE orders_rest PARTITION OF orders DEFAULT;
CREATE TABLE order_lines (order_id int REFERENCES orders ON DELETE CASCADE);
INSERT INTO orders VALUES (1), (2), (50);
INSERT INTO order_lines VALUES (1), (2), (50);
SELECT * FROM partheal_attach_window('orders', '0', '10');
SELECT * FROM partheal_attach_window('orders', '100', '200');
SELECT count(*) AS lines_kept FROM order_lines;

-- A published table: a subscriber would see moved rows as deleted, so a
-- DEFAULT holding rows of the window stays as it is.
CREATE TABLE shipped (id int NOT NULL, v text) PARTITION BY RANGE (id);
CREATE TABLE shipped_rest PARTITION OF shipped DEFAULT;
INSERT INTO shipped VALUES (1, 'x'), (50, 'y');
-- (PostgreSQL's warning about wal_level is worded differently across majors.)
SET client_min_messages = error;
CREATE PUBLICATION shipping FOR TABLE shipped WITH (publish_via_partition_root = true);
RESET client_min_messages;
SELECT * FROM partheal_attach_window('shipped', '0', '10');
SELECT * FROM partheal_attach_window('shipped', '100', '200');
DROP PUBLICATION shipping;
SELECT outcome, rows_moved FROM partheal_attach_window('shipped', '0', '10');

-- Inside the caller's transaction: a rollback takes the attach back.
BEGIN;
SELECT outcome, rows_moved FROM partheal_attach_window('nums', '10', '20');
ROLLBACK;
SELECT * FROM tree('nums');
-- Inside a PL/pgSQL block with an EXCEPTION clause.
DO $$
DECLARE r record;
BEGIN
  SELECT * INTO r FROM partheal_attach_window('nums', '30', '40');
  RAISE NOTICE 'outcome %', r.outcome;
  PERFORM partheal_attach_window('nums', '35', '45');
EXCEPTION WHEN invalid_object_definition THEN
  RAISE NOTICE 'caught %: %', SQLSTATE, SQLERRM;
END $$;
SELECT count(*) AS nums_p30_exists FROM pg_class WHERE relname = 'nums_p30';

-- The drain: DEFAULT window by window, oldest first, each window created if
-- missing and cut to fit between the partitions already there. NULL keys
-- have no window and stay in DEFAULT. (Terse: the summary's DETAIL is the
-- time it took.)
\set VERBOSITY terse
INSERT INTO nums VALUES (NULL, 'no key');
CALL partheal_partition_data('nums', '7');
SELECT * FROM tree('nums');
-- Integer windows stop at the type's ends; its greatest value has no window.
CREATE TABLE edges (k int NOT NULL) PARTITION BY RANGE (k);
CREATE TABLE edges_rest PARTITION OF edges DEFAULT;
INSERT INTO edges VALUES (-2147483648), (5), (2147483600), (2147483647);
CALL partheal_partition_data('edges', '100');
SELECT * FROM tree('edges');
CREATE TABLE logs (at timestamptz NOT NULL, v int) PARTITION BY RANGE (at);
CREATE TABLE logs_legacy (LIKE logs);
INSERT INTO logs_legacy SELECT '2025-10-15'::timestamptz + g * interval '9 days', g
  FROM generate_series(0, 20) g;
INSERT INTO logs_legacy VALUES ('infinity', -1);
ALTER TABLE logs ATTACH PARTITION logs_legacy DEFAULT;
SELECT count(*) FROM logs;
CALL partheal_partition_data('logs', '1 month', 2);
SELECT * FROM tree('logs');
SELECT count(*) FROM logs;
-- Inside a transaction block it cannot commit, says so, and still works.
CREATE TABLE daily (d date NOT NULL) PARTITION BY RANGE (d);
CREATE TABLE daily_legacy PARTITION OF daily DEFAULT;
INSERT INTO daily SELECT '2026-01-01'::date + g FROM generate_series(0, 5) g;
BEGIN;
CALL partheal_partition_data('daily', '2 days');
COMMIT;
-- A window left in DEFAULT stops the drain with a WARNING naming it.
CALL partheal_partition_data('remote', '10');
\set VERBOSITY default
SELECT * FROM tree('daily');
-- Bad input.
CALL partheal_partition_data('daily', '1 month 2 days');
\echo :LAST_ERROR_SQLSTATE
CALL partheal_partition_data('daily', '12 hours');
\echo :LAST_ERROR_SQLSTATE
CALL partheal_partition_data('nums', 'ten');
\echo :LAST_ERROR_SQLSTATE
CALL partheal_partition_data('nums', '10', 0);
\echo :LAST_ERROR_SQLSTATE
CALL partheal_partition_data('nums', NULL);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE texts (k text NOT NULL) PARTITION BY RANGE (k);
CALL partheal_partition_data('texts', '1');
\echo :LAST_ERROR_SQLSTATE
SET ROLE attach_stranger;
CALL partheal_partition_data('owned', '10');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- Day and week windows of a timestamptz key are calendar days and weeks of
-- the session's TimeZone, midnight to midnight: a summer day in New York is
-- [00:00-04, 00:00-04), the day the clocks go forward is 23 hours long, and
-- weeks begin on Monday. Smaller units are lengths of time. (Terse: the
-- summary's DETAIL is the time it took.)
\set VERBOSITY terse
SET TimeZone = 'America/New_York';
CREATE TABLE nyc (at timestamptz NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE nyc_legacy PARTITION OF nyc DEFAULT;
INSERT INTO nyc VALUES ('2026-07-01 00:30-04'), ('2026-07-01 23:30-04'), ('2026-07-02 00:10-04'),
  ('2026-03-08 12:00-04');
CALL partheal_partition_data('nyc', '1 day');
SELECT * FROM tree('nyc');
CREATE TABLE nyc_weeks (at timestamptz NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE nyc_weeks_legacy PARTITION OF nyc_weeks DEFAULT;
INSERT INTO nyc_weeks VALUES ('2026-07-01 12:00'), ('2026-07-06 00:00'), ('2026-07-05 23:59');
CALL partheal_partition_data('nyc_weeks', '1 week');
SELECT child, bound, rows, to_char(lower(r), 'Dy') AS starts FROM tree('nyc_weeks'),
  LATERAL (SELECT tstzrange(substring(bound FROM 'FROM [(]''([^'']+)')::timestamptz,
                            substring(bound FROM 'TO [(]''([^'']+)')::timestamptz) AS r) b
 WHERE bound <> 'DEFAULT';
CREATE TABLE nyc_hours (at timestamptz NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE nyc_hours_legacy PARTITION OF nyc_hours DEFAULT;
INSERT INTO nyc_hours VALUES ('2026-07-01 12:30');
CALL partheal_partition_data('nyc_hours', '6 hours');
SELECT * FROM tree('nyc_hours');
DROP TABLE nyc, nyc_weeks, nyc_hours;
SET TimeZone = 'UTC';
\set VERBOSITY default

-- A parent with a tablespace gives it to the window's table, as PARTITION
-- OF would.
SET allow_in_place_tablespaces = true;
CREATE TABLESPACE attach_space LOCATION '';
RESET allow_in_place_tablespaces;
CREATE TABLE spaced_window (k int NOT NULL) PARTITION BY RANGE (k) TABLESPACE attach_space;
SELECT outcome FROM partheal_attach_window('spaced_window', '0', '10');
SELECT c.relname, t.spcname FROM pg_class c LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
 WHERE c.relname = 'spaced_window_p0';
