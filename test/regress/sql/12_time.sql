-- Time-keyed tables (issue 18): registration, windows and names by the
-- calendar in a zone, the heal of appends with keys given and from
-- defaults, far-off keys, infinity, the non-owner policy, and the session's
-- TimeZone, which never moves a boundary.
--
-- The worker keeps the windows around now() (create-ahead by the clock);
-- every listing here is of windows before 2025, which only the heal makes.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
CREATE FUNCTION old_windows(p regclass) RETURNS TABLE (name name, bound text)
  LANGUAGE sql AS $$
  SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent = p
     AND substring(pg_get_expr(c.relpartbound, c.oid) from 'FROM \(''([0-9]+)')::int < 2025
   ORDER BY 2 $$;
CREATE FUNCTION window_count(p regclass) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM pg_inherits WHERE inhparent = p $$;

-- Every bad registration, and its SQLSTATE.
CREATE TABLE tz_t (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
CREATE TABLE ts_t (at timestamp NOT NULL DEFAULT localtimestamp, body text) PARTITION BY RANGE (at);
CREATE TABLE d_t (day date NOT NULL DEFAULT CURRENT_DATE, body text) PARTITION BY RANGE (day);
CREATE TABLE id_t (id bigserial, body text) PARTITION BY RANGE (id);
\set VERBOSITY verbose
SELECT undated(partheal_manage('tz_t', interval '1 month 2 days'));
SELECT undated(partheal_manage('tz_t', interval '0'));
SELECT undated(partheal_manage('tz_t', interval '-1 day'));
SELECT undated(partheal_manage('tz_t', interval '7 hours'));
SELECT undated(partheal_manage('tz_t', interval '5 months'));
SELECT undated(partheal_manage('tz_t', interval '3 days'));
SELECT undated(partheal_manage('tz_t', interval '24 hours'));
SELECT undated(partheal_manage('tz_t', interval '1.5 seconds'));
SELECT undated(partheal_manage('d_t', interval '1 hour'));
SELECT undated(partheal_manage('ts_t', interval '1 day', time_zone => 'Europe/Berlin'));
SELECT undated(partheal_manage('d_t', interval '1 day', time_zone => 'Asia/Kolkata'));
SELECT undated(partheal_manage('tz_t', interval '1 day', time_zone => 'Mars/Olympus_Mons'));
SELECT undated(partheal_manage('tz_t', interval '1 day', retention => interval '-1 day'));
SELECT undated(partheal_manage('tz_t', interval '1 day', retention => interval '0'));
SELECT undated(partheal_manage('tz_t', interval '1 day', retention => interval '5000 years'));
SELECT undated(partheal_manage('tz_t', interval '1 day', drain_reach => interval '-1 day'));
SELECT undated(partheal_manage('tz_t', interval '1 day', drain_reach => interval '0'));
SELECT undated(partheal_manage('tz_t', interval '1 day', drain_reach => interval '5000 years'));
SELECT undated(partheal_manage('tz_t', interval '1 day', premake => -1));
SELECT undated(partheal_manage('tz_t', interval '1 day', premake => NULL));
SELECT undated(partheal_manage('tz_t', NULL::interval));
SELECT undated(partheal_manage('tz_t', interval '1 day', time_zone => NULL));
SELECT undated(partheal_manage('id_t', interval '1 day'));
SELECT undated(partheal_manage('tz_t', 1000));
\set VERBOSITY default
-- (Here, where PL/pgSQL's LOCATION line, which differs by major, is not shown.)
SELECT undated(partheal_manage('tz_t', '1000', drain_reach => '1 day'));
-- A POSIX specification is refused: its offsets count west of Greenwich.
SELECT undated(partheal_manage('tz_t', interval '1 day', time_zone => 'UTC+5'));
SELECT undated(partheal_manage('tz_t', interval '1 day', time_zone => '<+05>-05'));
-- The host's own zone is refused too: it is not a stable name.
SELECT undated(partheal_manage('tz_t', interval '1 day', time_zone => 'localtime'));
SELECT undated(partheal_manage('tz_t', interval '1 day', time_zone => 'PosixRules'));
-- Nothing was registered or created by any of them.
SELECT count(*) FROM partheal_config WHERE parent IN ('tz_t'::regclass, 'ts_t', 'd_t', 'id_t');
SELECT window_count('tz_t'), window_count('ts_t'), window_count('d_t');

-- An untyped second argument fits both forms: partheal_manage(regclass,
-- text) takes it, a number for the id form and anything else for the
-- interval form.
CREATE TABLE untyped_t (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
CREATE TABLE untyped_i (id bigserial) PARTITION BY RANGE (id);
SELECT undated(partheal_manage('untyped_t', '1 day')), partheal_manage('untyped_i', '1000');
SELECT parent, partition_size, partition_interval, premake FROM partheal_config
 WHERE parent IN ('untyped_t'::regclass, 'untyped_i') ORDER BY parent::text;
-- The natural forms with more arguments (0.9): an untyped window length with
-- premake third, or named, or with an untyped retention and a zone.
SELECT undated(partheal_manage('untyped_t', '1 hour', 3));
SELECT partition_interval, premake FROM partheal_config WHERE parent = 'untyped_t'::regclass;
SELECT undated(partheal_manage('untyped_t', '1 day', premake => 2, retention => '30 days', time_zone => 'Europe/Berlin'));
SELECT partition_interval, premake, retention, time_zone FROM partheal_config WHERE parent = 'untyped_t'::regclass;
-- What is neither a size nor a window length says so; a quoted size with
-- more arguments says to write it as a number; nothing changes.
SELECT undated(partheal_manage('untyped_t', '1 dya', 2));
SELECT undated(partheal_manage('untyped_i', '1000', 50));
SELECT parent, partition_size, partition_interval, premake FROM partheal_config
 WHERE parent IN ('untyped_t'::regclass, 'untyped_i') ORDER BY parent::text;
SELECT partheal_unmanage('untyped_t'), partheal_unmanage('untyped_i');

-- A zone database name is taken in any case, as SET TIME ZONE takes it, and
-- so is a legacy name of the database with digits in it.
CREATE TABLE zcase_t (at timestamptz NOT NULL) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('zcase_t', interval '1 day', premake => 0, time_zone => 'europe/berlin'));
SELECT partheal_unmanage('zcase_t');
SELECT undated(partheal_manage('zcase_t', interval '1 day', premake => 0, time_zone => 'EST5EDT'));
SELECT time_zone FROM partheal_config WHERE parent = 'zcase_t'::regclass;
SELECT partheal_unmanage('zcase_t');
DROP TABLE zcase_t;

-- Registration makes the window holding now() and premake after it, before
-- it returns; a ROLLBACK takes them back with the registration.
BEGIN;
SELECT undated(partheal_manage('tz_t', interval '1 day', premake => 2));
SELECT window_count('tz_t');
ROLLBACK;
SELECT window_count('tz_t'), count(*) FROM partheal_config WHERE parent = 'tz_t'::regclass;
SELECT undated(partheal_manage('tz_t', interval '1 day', premake => 2));
SELECT window_count('tz_t') >= 3 AS made_ahead;
-- The window holding now() is there, so a plain INSERT lands.
INSERT INTO tz_t (body) VALUES ('plain insert');
SELECT count(*) FROM tz_t;

-- Daily in Europe/Berlin across both 2021 DST changes: the spring day is 23
-- hours, the autumn day 25, with no hole and no overlap.
CREATE TABLE berlin (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('berlin', interval '1 day', premake => 0, time_zone => 'Europe/Berlin'));
SELECT count(*) FROM partheal_append('berlin', '[
  {"at": "2021-03-27 12:00:00+01"}, {"at": "2021-03-28 01:30:00+01"},
  {"at": "2021-03-28 23:59:59+02"}, {"at": "2021-03-29 00:00:00+02"},
  {"at": "2021-10-31 02:30:00+02"}, {"at": "2021-10-31 02:30:00+01"},
  {"at": "2021-10-31 23:59:59+01"}]');
SELECT * FROM old_windows('berlin');
SELECT name, upper(r) - lower(r) AS length FROM (
  SELECT name, tstzrange(substring(bound from 'FROM \(''([^'']+)')::timestamptz,
                         substring(bound from 'TO \(''([^'']+)')::timestamptz) AS r
    FROM old_windows('berlin')) w ORDER BY lower(r);

-- America/Havana goes back from 01:00 to 00:00 (3 November 2024): local
-- midnight happens twice. The day the clocks go back is the 25-hour window,
-- from the first midnight, so a row at 00:30 of the first one (04:30 UTC)
-- lands in the window of its own local day, 3 November, and 2 November is
-- 24 hours.
CREATE TABLE hv (at timestamptz NOT NULL, v int) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('hv', interval '1 day', premake => 0, time_zone => 'America/Havana'));
SELECT count(*) FROM partheal_append('hv', '[
  {"at": "2024-11-03 04:30:00+00"}, {"at": "2024-11-03 05:30:00+00"}, {"at": "2024-11-02 12:00:00+00"}]');
SELECT tableoid::regclass AS window, at FROM hv ORDER BY at;
SELECT name, upper(r) - lower(r) AS length FROM (
  SELECT name, tstzrange(substring(bound from 'FROM \(''([^'']+)')::timestamptz,
                         substring(bound from 'TO \(''([^'']+)')::timestamptz) AS r
    FROM old_windows('hv')) w ORDER BY lower(r);
SELECT partheal_unmanage('hv');
DROP TABLE hv;

-- A registration says what its retention will remove at the worker's next
-- poll: the due windows, named with their bounds, in a NOTICE. Rolled back
-- here, so the worker never acts on it.
CREATE TABLE rn (at timestamptz NOT NULL, v int) PARTITION BY RANGE (at);
CREATE TABLE rn_old1 PARTITION OF rn FOR VALUES FROM ('2021-01-01 00:00+00') TO ('2021-01-02 00:00+00');
CREATE TABLE rn_old2 PARTITION OF rn FOR VALUES FROM ('2021-01-02 00:00+00') TO ('2021-01-03 00:00+00');
BEGIN;
SELECT undated(partheal_manage('rn', interval '1 day', premake => 0, retention => interval '30 days'));
ROLLBACK;
BEGIN;
SELECT undated(partheal_manage('rn', interval '1 day', premake => 0, retention => interval '30 days',
                       retention_keep_table => true));
ROLLBACK;
-- Nothing due: nothing said.
BEGIN;
SELECT undated(partheal_manage('rn', interval '1 day', premake => 0, retention => interval '100 years'));
ROLLBACK;
DROP TABLE rn;

-- A session's TimeZone moves nothing: the same keys from a session in
-- America/New_York land in the same windows, and a new one is cut in Berlin.
SET TimeZone = 'America/New_York';
SELECT count(*) FROM partheal_append('berlin', '[{"at": "2021-03-28 12:00:00+02"}, {"at": "2021-06-01 23:30:00+02"}]');
SET TimeZone = 'UTC';

SELECT * FROM old_windows('berlin') WHERE name LIKE 'berlin_p202106%';

-- Monthly in Asia/Kolkata (+05:30): months start at local midnight of the 1st.
CREATE TABLE kolkata (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('kolkata', interval '1 month', premake => 0, time_zone => 'Asia/Kolkata'));
SELECT count(*) FROM partheal_append('kolkata', '[{"at": "2021-11-30 18:30:00+00"}, {"at": "2021-11-30 18:29:59+00"}]');
SELECT * FROM old_windows('kolkata');

-- Quarters, half-years, years and weeks (from Monday, in UTC).
CREATE TABLE quarters (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('quarters', interval '3 months', premake => 0));
SELECT count(*) FROM partheal_append('quarters', '{"at": "2021-05-17 10:00:00+00"}');
SELECT * FROM old_windows('quarters');
CREATE TABLE years (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('years', interval '1 year', premake => 0));
SELECT count(*) FROM partheal_append('years', '{"at": "2021-05-17 10:00:00+00"}');
SELECT * FROM old_windows('years');
CREATE TABLE weeks (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('weeks', interval '1 week', premake => 0));
-- 2021-12-01 was a Wednesday; 2021-11-29 a Monday.
SELECT count(*) FROM partheal_append('weeks', '[{"at": "2021-12-01 10:00:00+00"}, {"at": "2021-11-29 00:00:00+00"}, {"at": "2021-11-28 23:59:59+00"}]');
SELECT * FROM old_windows('weeks');

-- Under a day: fixed lengths from the Unix epoch, named to the second, from
-- the lower bound's time in the zone.
CREATE TABLE quarter_hours (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('quarter_hours', interval '15 minutes', premake => 0, time_zone => 'Asia/Kolkata'));
SELECT count(*) FROM partheal_append('quarter_hours', '[{"at": "2021-12-01 10:07:00+00"}, {"at": "2021-12-01 10:15:00+00"}]');
SELECT * FROM old_windows('quarter_hours');
CREATE TABLE seconds (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('seconds', interval '2 seconds', premake => 0));
SELECT count(*) FROM partheal_append('seconds', '[{"at": "1970-01-01 00:00:03+00"}, {"at": "2021-12-01 10:07:01.5+00"}]');
SELECT * FROM old_windows('seconds');

-- timestamp and date keys: wall-clock windows, no zone.
SELECT undated(partheal_manage('ts_t', interval '1 hour', premake => 0));
SELECT count(*) FROM partheal_append('ts_t', '[{"at": "2021-03-28 02:30:00"}, {"at": "2021-03-28 03:10:00"}]');
SELECT * FROM old_windows('ts_t');
SELECT undated(partheal_manage('d_t', interval '1 month', premake => 0));
SELECT count(*) FROM partheal_append('d_t', '[{"day": "2021-02-28"}, {"day": "2020-02-29"}]');
SELECT * FROM old_windows('d_t');

-- Keys from the column default, evaluated once per row in the backend:
-- now() is the transaction's time, so every row of a batch has it.
CREATE TABLE clocked (at timestamptz NOT NULL DEFAULT now(), seen timestamptz DEFAULT clock_timestamp(), n int) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('clocked', interval '1 hour', premake => 0));
BEGIN;
SELECT count(*) FROM partheal_append('clocked', '[{"n": 1}, {"n": 2}, {"n": 3}]');
SELECT count(DISTINCT at) AS distinct_keys, bool_and(at = now()) AS all_now FROM clocked;
COMMIT;
-- A default from a function: the row is stored with the key it was healed for.
CREATE FUNCTION fixed_past() RETURNS timestamptz LANGUAGE sql AS $$ SELECT timestamptz '2021-07-04 12:00:00+00' $$;
CREATE TABLE by_function (at timestamptz NOT NULL DEFAULT fixed_past(), n int) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('by_function', interval '1 day', premake => 0));
SELECT count(*) FROM partheal_append('by_function', '{"n": 7}');
SELECT at, n, tableoid::regclass FROM by_function;
-- A null key, given or from a null default, is refused with nothing created.
\set VERBOSITY verbose
SELECT partheal_append('by_function', '{"at": null}');
ALTER TABLE by_function ALTER COLUMN at DROP DEFAULT;
SELECT partheal_append('by_function', '{"n": 8}');
\set VERBOSITY default
-- (Only the old window: now's and, after 80% of the day, the next are the
-- worker's, made by the clock.)
SELECT * FROM old_windows('by_function');

-- A batch that straddles many windows heals each once, in one round.
SET partheal.max_retries = 0;
SELECT count(*) FROM partheal_append('years', (SELECT jsonb_agg(jsonb_build_object('at', make_timestamptz(2000 + g % 8, 6, 1, 0, 0, 0, 'UTC'))) FROM generate_series(1, 40) g));
RESET partheal.max_retries;
SELECT count(*) AS windows_before_2025 FROM old_windows('years');

-- Far-off keys: the owner's append heals the one window of its key, never
-- the gap between.
SELECT count(*) FROM partheal_append('berlin', '[{"at": "9999-12-31 12:00:00+00"}, {"at": "1970-01-01 00:00:00+00"}]');
SELECT name, bound FROM (SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'berlin'::regclass) w
 WHERE name IN ('berlin_p99991231', 'berlin_p19700101') ORDER BY 1;
-- infinity and -infinity have no window: 22008, nothing created.
SELECT window_count('berlin') AS before \gset
\set VERBOSITY verbose
SELECT partheal_append('berlin', '[{"at": "2021-08-01 00:00:00+00"}, {"at": "infinity"}]');
SELECT partheal_append('berlin', '{"at": "-infinity"}');
\set VERBOSITY default
SELECT window_count('berlin') = :before AS nothing_created;
-- A partition up to MAXVALUE made by hand takes infinity: no heal, no error.
CREATE TABLE berlin_end (LIKE berlin);
ALTER TABLE berlin ATTACH PARTITION berlin_end FOR VALUES FROM ('10000-01-01 00:00:00+00') TO (MAXVALUE);
SELECT count(*) FROM partheal_append('berlin', '{"at": "infinity"}');

-- Windows made by hand are respected: the heal clips to the gap.
CREATE TABLE hand (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
CREATE TABLE hand_odd (LIKE hand);
ALTER TABLE hand ATTACH PARTITION hand_odd FOR VALUES FROM ('2021-05-01 06:00:00+00') TO ('2021-05-02 06:00:00+00');
SELECT undated(partheal_manage('hand', interval '1 day', premake => 0));
SELECT count(*) FROM partheal_append('hand', '[{"at": "2021-05-01 01:00:00+00"}, {"at": "2021-05-02 07:00:00+00"}, {"at": "2021-05-03 07:00:00+00"}]');
SELECT * FROM old_windows('hand');

-- A window split by partitions made by hand has a gap on each side of
-- each: one batch with a key in every gap heals every gap in one round (a
-- round asks once per gap, not once per window).
CREATE TABLE gaps (at timestamptz NOT NULL, n int) PARTITION BY RANGE (at);
CREATE TABLE gaps_h4 PARTITION OF gaps FOR VALUES FROM ('2021-06-15 04:00+00') TO ('2021-06-15 05:00+00');
CREATE TABLE gaps_h8 PARTITION OF gaps FOR VALUES FROM ('2021-06-15 08:00+00') TO ('2021-06-15 09:00+00');
CREATE TABLE gaps_h12 PARTITION OF gaps FOR VALUES FROM ('2021-06-15 12:00+00') TO ('2021-06-15 13:00+00');
CREATE TABLE gaps_h16 PARTITION OF gaps FOR VALUES FROM ('2021-06-15 16:00+00') TO ('2021-06-15 17:00+00');
SELECT undated(partheal_manage('gaps', interval '1 day', premake => 0));
SET partheal.max_retries = 0;
SELECT count(*) FROM partheal_append('gaps', '[{"at": "2021-06-15 01:00+00"}, {"at": "2021-06-15 06:00+00"}, {"at": "2021-06-15 10:00+00"}, {"at": "2021-06-15 14:00+00"}, {"at": "2021-06-15 20:00+00"}]');
SELECT * FROM old_windows('gaps');
-- The same for ids.
CREATE TABLE gap_ids (id bigserial, n int) PARTITION BY RANGE (id);
CREATE TABLE gap_ids_2 PARTITION OF gap_ids FOR VALUES FROM (2) TO (3);
CREATE TABLE gap_ids_4 PARTITION OF gap_ids FOR VALUES FROM (4) TO (5);
CREATE TABLE gap_ids_6 PARTITION OF gap_ids FOR VALUES FROM (6) TO (7);
CREATE TABLE gap_ids_8 PARTITION OF gap_ids FOR VALUES FROM (8) TO (9);
SELECT undated(partheal_manage('gap_ids', 10, NULL, premake => 0));
SELECT * FROM partheal_append('gap_ids', '[{"id": 1}, {"id": 3}, {"id": 5}, {"id": 7}, {"id": 9}]');
RESET partheal.max_retries;
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'gap_ids'::regclass ORDER BY 2;
SELECT partheal_unmanage('gaps'), partheal_unmanage('gap_ids');

-- What append returns: a time-keyed table with a sequence-backed id column
-- returns the ids; without one, a NULL per row stored.
CREATE TABLE with_ids (id bigserial, at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('with_ids', interval '1 day', premake => 0));
SELECT * FROM partheal_append('with_ids', '[{"body": "a", "at": "2021-01-01 00:00:00+00"}, {"body": "b"}]');
SELECT id, body FROM with_ids ORDER BY id;
SELECT * FROM partheal_append('quarters', '[{"at": "2021-01-01 00:00:00+00"}, {}]');

-- partheal_reserve is for ids.
\set VERBOSITY verbose
SELECT partheal_reserve('tz_t', 10);
\set VERBOSITY default

-- The non-owner policy: a role that does not own the table may heal only
-- premake windows either side of now's.
CREATE ROLE regress_time_writer;
GRANT INSERT ON berlin TO regress_time_writer;
SET ROLE regress_time_writer;
SELECT window_count('berlin') AS before \gset
\set VERBOSITY verbose
SELECT partheal_append('berlin', '{"at": "2022-02-02 12:00:00+00"}');
\set VERBOSITY default
DO $$
BEGIN
  PERFORM partheal_append('berlin', jsonb_build_object('at', now() + interval '30 days'));
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE '30 days ahead: %', SQLSTATE;
END $$;
SELECT window_count('berlin') = :before AS nothing_created;
-- Within premake (0 here) of now: now's own window, which exists anyway.
SELECT count(*) FROM partheal_append('berlin', '{}');
RESET ROLE;

-- partheal_stats shows time-keyed tables beside id-keyed ones.
SELECT parent, key_type, partition_interval, time_zone, premake, heals > 0 AS healed,
       next_from, next_to, ahead_claimed_to
  FROM partheal_stats WHERE parent IN ('berlin'::regclass, 'kolkata'::regclass, 'd_t'::regclass)
 ORDER BY parent::text;

-- A DEFAULT partition may stay. With drain_default => false partheal
-- makes no windows while it is attached (each would scan it as it is
-- attached): registration says so with a WARNING, a row with no window of
-- its own goes there and stays, nothing is lost and no heal happens.
CREATE TABLE tdef (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
CREATE TABLE tdef_d PARTITION OF tdef DEFAULT;
INSERT INTO tdef (body) VALUES ('now, before registration');
SELECT undated(partheal_manage('tdef', interval '1 day', premake => 1, drain_default => false));
SELECT count(*) AS registered, bool_and(NOT drain_default) AS not_drained
  FROM partheal_config WHERE parent = 'tdef'::regclass;
SELECT count(*) AS windows FROM pg_inherits WHERE inhparent = 'tdef'::regclass AND inhrelid <> 'tdef_d'::regclass;
SELECT count(*) FROM partheal_append('tdef', '[{"body": "now"}, {"at": "2021-01-01 00:00:00+00"}]');
SELECT tableoid::regclass, count(*) FROM tdef GROUP BY 1 ORDER BY 1;
SELECT heals, drain_default, drained_rows, drained_windows FROM partheal_stats WHERE parent = 'tdef'::regclass;
-- Registered again without drain_default (NULL): the registration's stays.
SELECT undated(partheal_manage('tdef', interval '1 day', premake => 2));
SELECT premake, drain_default FROM partheal_config WHERE parent = 'tdef'::regclass;
-- By default the worker drains it instead (test/t/017_drain.pl): the
-- NOTICE says so, and partheal_stats shows the drain's columns.
CREATE TABLE tdrain (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
CREATE TABLE tdrain_d PARTITION OF tdrain DEFAULT;
SELECT undated(partheal_manage('tdrain', interval '1 day', premake => 1));
SELECT drain_default FROM partheal_config WHERE parent = 'tdrain'::regclass;
SELECT default_partition, drain_default, default_rows, drained_rows, drained_windows
  FROM partheal_stats WHERE parent = 'tdrain'::regclass;
SELECT partheal_unmanage('tdrain');
SELECT partheal_unmanage('tdef');

-- The worked examples of docs/time-keys.md, as written there (2026). A
-- window the clock has made already has the same bounds and name.
CREATE FUNCTION named_windows(p regclass, names text[]) RETURNS TABLE (name name, bound text)
  LANGUAGE sql AS $$
  SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent = p AND c.relname = ANY (names) ORDER BY 2 $$;
CREATE TABLE events (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('events', interval '1 day', premake => 0, time_zone => 'Europe/Berlin'));
SELECT count(*) FROM partheal_append('events', '[{"at": "2026-03-28 12:00:00+00"}, {"at": "2026-03-29 12:00:00+00"}, {"at": "2026-03-30 12:00:00+00"}, {"at": "2026-10-24 12:00:00+00"}, {"at": "2026-10-25 12:00:00+00"}, {"at": "2026-10-26 12:00:00+00"}]');
SELECT * FROM named_windows('events', ARRAY['events_p20260328', 'events_p20260329', 'events_p20260330', 'events_p20261024', 'events_p20261025', 'events_p20261026']);
SET TimeZone = 'Europe/Berlin';
SELECT * FROM named_windows('events', ARRAY['events_p20260329']);
SET TimeZone = 'UTC';
CREATE TABLE invoices (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('invoices', interval '1 month', premake => 0, time_zone => 'Asia/Kolkata'));
SELECT count(*) FROM partheal_append('invoices', '[{"at": "2026-11-15 00:00:00+00"}, {"at": "2026-12-15 00:00:00+00"}, {"at": "2027-01-15 00:00:00+00"}]');
SELECT * FROM named_windows('invoices', ARRAY['invoices_p20261101', 'invoices_p20261201', 'invoices_p20270101']);
CREATE TABLE ticks (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('ticks', interval '15 minutes', premake => 0));
CREATE TABLE ticks_in (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('ticks_in', interval '15 minutes', premake => 0, time_zone => 'Asia/Kolkata'));
CREATE TABLE ticks_hour (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('ticks_hour', interval '1 hour', premake => 0, time_zone => 'Asia/Kolkata'));
SELECT count(*) FROM unnest(ARRAY['ticks', 'ticks_in', 'ticks_hour']::regclass[]) t, LATERAL partheal_append(t, '{"at": "2026-12-01 10:07:00+00"}');
SELECT * FROM named_windows('ticks', ARRAY['ticks_p20261201_100000']);
SELECT * FROM named_windows('ticks_in', ARRAY['ticks_in_p20261201_153000']);
SELECT * FROM named_windows('ticks_hour', ARRAY['ticks_hour_p20261201_153000']);
CREATE TABLE reports (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('reports', interval '1 week', premake => 0));
CREATE TABLE reports_be (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('reports_be', interval '1 week', premake => 0, time_zone => 'Europe/Berlin'));
SELECT count(*) FROM unnest(ARRAY['reports', 'reports_be']::regclass[]) t, LATERAL partheal_append(t, '{"at": "2026-12-01 10:07:00+00"}');
SELECT * FROM named_windows('reports', ARRAY['reports_p20261130']);
SELECT * FROM named_windows('reports_be', ARRAY['reports_be_p20261130']);
CREATE TABLE totals (day date NOT NULL DEFAULT CURRENT_DATE, n bigint) PARTITION BY RANGE (day);
SELECT undated(partheal_manage('totals', interval '3 months', premake => 0));
SELECT count(*) FROM partheal_append('totals', '{"day": "2026-12-01"}');
SELECT * FROM named_windows('totals', ARRAY['totals_p20261001']);
-- Hourly windows named in Berlin repeat a local hour on the autumn day: the
-- second takes the taken-name suffix.
CREATE TABLE hourly_be (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('hourly_be', interval '1 hour', premake => 0, time_zone => 'Europe/Berlin'));
SELECT count(*) FROM partheal_append('hourly_be', '[{"at": "2026-10-25 00:30:00+00"}, {"at": "2026-10-25 01:30:00+00"}]');
SELECT * FROM named_windows('hourly_be', ARRAY['hourly_be_p20261025_020000', 'hourly_be_p20261025_020000_1']);
SELECT partheal_unmanage(t) FROM unnest(ARRAY['events', 'invoices', 'ticks', 'ticks_in', 'ticks_hour', 'reports', 'reports_be', 'totals', 'hourly_be']::regclass[]) t;

-- drain_reach: how far back the drain makes windows for late rows without
-- retention, stored in partheal_config and kept when a registration leaves
-- it out; the text form passes it on.
CREATE TABLE reach_t (at timestamptz NOT NULL) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('reach_t', '1 day', 0, drain_reach => '3 days'));
SELECT drain_reach FROM partheal_config WHERE parent = 'reach_t'::regclass;
SELECT undated(partheal_manage('reach_t', interval '1 day', premake => 0));
SELECT drain_reach FROM partheal_config WHERE parent = 'reach_t'::regclass;
SELECT undated(partheal_manage('reach_t', interval '1 day', premake => 0, retention => interval '90 days'));
SELECT partheal_unmanage('reach_t');
DROP TABLE reach_t;

-- Unmanage and clean up.
SELECT partheal_unmanage(t) FROM unnest(ARRAY['tz_t', 'ts_t', 'd_t', 'berlin', 'kolkata', 'quarters', 'years', 'weeks', 'quarter_hours', 'seconds', 'clocked', 'by_function', 'hand', 'with_ids']::regclass[]) t;
DROP ROLE regress_time_writer;
