-- partheal_cover(parent, keys text[]): the partitions that rows with these
-- keys need, made before a load that gives its own ids or times, under the
-- limits partheal_append puts on such rows. Bad input changes nothing.
\set VERBOSITY default
CREATE TABLE cv (id bigserial, v text) PARTITION BY RANGE (id);
SELECT undated(partheal_manage('cv', 100, mark_percent => NULL, premake => 0));
CREATE VIEW cv_parts AS
  SELECT string_agg(c.relname, ', ' ORDER BY c.relname) AS partitions
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent = 'cv'::regclass;

-- Two keys in one partition and one in another: two partitions; again, none.
SELECT partheal_cover('cv', ARRAY['5', '50', '250']);
SELECT * FROM cv_parts;
SELECT partheal_cover('cv', ARRAY['5', '250']);
SELECT partheal_cover('cv', '{}');
-- The keys are read as the key column reads them.
SELECT partheal_cover('cv', ARRAY[' 420 ']);
SELECT * FROM cv_parts;

-- Bad input: an error that names the problem, and no partition made.
SELECT partheal_cover(NULL, ARRAY['1']);
SELECT partheal_cover('cv', NULL);
SELECT partheal_cover('cv', ARRAY['700', NULL]);
SELECT partheal_cover('cv', ARRAY['700', 'seven hundred']);
SELECT partheal_cover('cv', ARRAY['9223372036854775808']);
SELECT partheal_cover('cv', ARRAY[['700'], ['800']]);
SELECT partheal_cover('cv', (SELECT array_agg(i::text) FROM generate_series(1, 10001) i));
CREATE TABLE cv_plain (id bigint) PARTITION BY RANGE (id);
SELECT partheal_cover('cv_plain', ARRAY['1']);
BEGIN READ ONLY;
SELECT partheal_cover('cv', ARRAY['700']);
ROLLBACK;
SELECT * FROM cv_parts;

-- A role that does not own the table: INSERT is needed, and keys far from
-- the sequence position (partheal.max_ahead_partitions = 1 partition either
-- side) are refused before anything is made. cv's position is 1, its
-- partition cv_p0; cv_p100 is within reach, cv_p500 is not.
CREATE ROLE regress_cover_writer;
SET ROLE regress_cover_writer;
SELECT partheal_cover('cv', ARRAY['150']);
RESET ROLE;
-- INSERT on another column only: not the key's, so no keys of its own.
GRANT INSERT (v) ON cv TO regress_cover_writer;
SET ROLE regress_cover_writer;
SELECT partheal_cover('cv', ARRAY['150']);
RESET ROLE;
REVOKE INSERT (v) ON cv FROM regress_cover_writer;
GRANT INSERT ON cv TO regress_cover_writer;
SET ROLE regress_cover_writer;
SELECT partheal_cover('cv', ARRAY['150']);
SELECT partheal_cover('cv', ARRAY['550']);
RESET ROLE;
SELECT * FROM cv_parts;

-- Nothing older than the retention: 500 ids below the highest id the
-- table holds. The sequence's position does not count.
CREATE TABLE cvr (id bigserial, v text) PARTITION BY RANGE (id);
SELECT undated(partheal_manage('cvr', 100, mark_percent => NULL, premake => 0, retention => 500));
SELECT setval('cvr_id_seq', 100000);
SELECT partheal_append('cvr', '{"id": 10000, "v": "newest"}');
SELECT partheal_cover('cvr', ARRAY['9000']);
SELECT partheal_cover('cvr', ARRAY['9700']);
DROP TABLE cvr;

-- A time-keyed table: times as text, as the column reads them.
CREATE TABLE cvt (at timestamptz NOT NULL, v text) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('cvt', interval '1 day', premake => 0));
SELECT partheal_cover('cvt', ARRAY['2030-01-02 10:00:00+00', '2030-01-02 23:00:00+00']);
SELECT count(*) AS windows_on_2030_01_02 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'cvt'::regclass AND c.relname LIKE 'cvt_p20300102%';
-- With the column's precision: a timestamptz(0) stores 07:59:59.6 as
-- 08:00:00, so that is the window made, and the INSERT of the same text lands.
CREATE TABLE cvp (at timestamptz(0) NOT NULL, v text) PARTITION BY RANGE (at);
SELECT undated(partheal_manage('cvp', interval '1 hour', premake => 0));
SET TimeZone = 'UTC';
SELECT partheal_cover('cvp', ARRAY['2031-01-01 07:59:59.6+00']);
SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'cvp'::regclass AND c.relname LIKE 'cvp_p2031%';
INSERT INTO cvp VALUES ('2031-01-01 07:59:59.6+00', 'rounded') RETURNING tableoid::regclass, at;
RESET TimeZone;
DROP TABLE cvp;
SELECT partheal_cover('cvt', ARRAY['not a time']);
SELECT partheal_cover('cvt', ARRAY['infinity']);
-- A role that does not own it gets the windows from premake (0) before
-- now's to premake after it: now's, and no other.
GRANT INSERT ON cvt TO regress_cover_writer;
SET ROLE regress_cover_writer;
SELECT partheal_cover('cvt', ARRAY[now()::text]);
SELECT partheal_cover('cvt', ARRAY['2031-06-01 00:00:00+00']);
RESET ROLE;
SELECT count(*) AS windows_in_2031 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'cvt'::regclass AND c.relname LIKE 'cvt_p2031%';

-- What a Citus worker node's heal asks of the coordinator: the outcome as
-- JSON, errors with their SQLSTATE. (On a server without Citus it works
-- the same; it is not for direct use.)
SELECT partheal_cover_for_node('public.cv', ARRAY['950'], false);
SELECT partheal_cover_for_node('public.cv', ARRAY['950'], false);
SELECT partheal_cover_for_node('public.cv_plain', ARRAY['1'], false)::jsonb - 'message' AS not_managed;
SELECT partheal_cover_for_node('public.no_such_table', ARRAY['1'], false)::jsonb ->> 'sqlstate' AS no_table;
SELECT partheal_cover_for_node('public.cv', ARRAY['x'], false)::jsonb ->> 'sqlstate' AS bad_key;
SELECT partheal_cover_for_node('public.cv', ARRAY['1'], NULL);
-- Saying an id was drawn on a node gets a role that does not own the
-- table nothing: an id no node's sequence is past is held to the window.
SET ROLE regress_cover_writer;
SELECT partheal_cover_for_node('public.cv', ARRAY['99999950'], true)::jsonb ->> 'sqlstate' AS claimed_drawn;
SELECT partheal_cover_for_node('public.cv', ARRAY['99999950'], false)::jsonb ->> 'sqlstate' AS given;
RESET ROLE;

DROP VIEW cv_parts;
DROP TABLE cv, cv_plain, cvt;
DROP ROLE regress_cover_writer;
