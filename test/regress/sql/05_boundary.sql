-- Create-ahead is off for these tables (mark_percent NULL): the partitions
-- listed are the heal's alone. 07_ahead covers create-ahead.
-- The C++/PostgreSQL boundary: errors keep their SQLSTATE, message, DETAIL and
-- HINT however often they cross it, and C++ exceptions become errors.
-- The self-test is no part of the extension's surface (0.4 dropped it): the
-- test declares it itself, as a superuser, from the library.
CREATE FUNCTION partheal_boundary_selftest(kind text)
  RETURNS void LANGUAGE c STRICT AS '$libdir/partheal', 'partheal_boundary_selftest';
REVOKE ALL ON FUNCTION partheal_boundary_selftest(text) FROM PUBLIC;
-- Every field of an error, as a plpgsql handler sees it.
CREATE FUNCTION error_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text; hin text; sch text; tab text; con text;
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
    hin = PG_EXCEPTION_HINT, sch = SCHEMA_NAME, tab = TABLE_NAME, con = CONSTRAINT_NAME;
  RETURN format(E'sqlstate %s\nmessage %s\ndetail %s\nhint %s\nschema %s, table %s, constraint %s',
                st, msg, det, hin, sch, tab, con);
END $$;
-- A PostgreSQL error raised under partheal's C++ code, raised again unchanged.
SELECT error_of($$SELECT partheal_boundary_selftest('postgres')$$);
\set VERBOSITY verbose
-- C++ exceptions: each an ERROR with a fitting SQLSTATE, never a crash.
SELECT partheal_boundary_selftest('bad_alloc');
SELECT partheal_boundary_selftest('fmt');
SELECT partheal_boundary_selftest('runtime_error');
SELECT partheal_boundary_selftest('unknown');
-- A C++ exception thrown inside a guard() leaves PostgreSQL's error stack
-- as it found it: the next PostgreSQL errors are reported normally.
\set VERBOSITY default
SELECT partheal_boundary_selftest('inside_guard');
SELECT 1 / 0;
SELECT partheal_boundary_selftest('postgres');
\set VERBOSITY verbose
-- The backend is fine afterwards.
SELECT 1 AS still_here;
\set VERBOSITY default
-- Users cannot call the self-test.
SET ROLE appender;
SELECT partheal_boundary_selftest('bad_alloc');
RESET ROLE;

-- An error from the user's own trigger, raised inside partheal's INSERT,
-- crosses into C++ and back out with every field intact.
CREATE TABLE inner_t (id bigserial, v text) PARTITION BY RANGE (id);
SELECT partheal_manage('inner_t', 100, NULL);
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.v = 'bad' THEN
    RAISE EXCEPTION 'inner refused %', NEW.v USING ERRCODE = 'P0042',
      DETAIL = 'detail from the inner trigger', HINT = 'hint from the inner trigger';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER refuse BEFORE INSERT ON inner_t FOR EACH ROW EXECUTE FUNCTION refuse();
SELECT * FROM partheal_append('inner_t', '{"v": "bad"}');
\echo :LAST_ERROR_SQLSTATE

-- Twice: an outer table's trigger appends to inner_t through partheal, so the
-- error crosses the boundary in the inner call and again in the outer one.
CREATE TABLE outer_t (id bigserial, v text) PARTITION BY RANGE (id);
SELECT partheal_manage('outer_t', 100, NULL);
CREATE FUNCTION forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM partheal_append('inner_t', jsonb_build_object('v', NEW.v));
  RETURN NEW;
END $$;
CREATE TRIGGER forward AFTER INSERT ON outer_t FOR EACH ROW EXECUTE FUNCTION forward();
\set SHOW_CONTEXT never
SELECT * FROM partheal_append('outer_t', '{"v": "bad"}');
\echo :LAST_ERROR_SQLSTATE
\set SHOW_CONTEXT errors
-- A plpgsql handler sees the same fields a client does.
SELECT error_of($$SELECT partheal_append('outer_t', '{"v": "bad"}')$$);
-- And the good path through both tables works.
SELECT * FROM partheal_append('outer_t', '{"v": "good"}');
SELECT (SELECT count(*) FROM outer_t) AS outer_rows, (SELECT count(*) FROM inner_t) AS inner_rows;

-- A routing miss is told from other 23514s by its fields. After a heal the
-- insert reruns in a subtransaction that retries routing misses only: a
-- CHECK violation there passes through with its fields, never retried.
CREATE TABLE checked (id bigserial, v int CHECK (v > 0)) PARTITION BY RANGE (id);
SELECT partheal_manage('checked', 10, NULL);
SELECT error_of($$SELECT partheal_append('checked', '{"v": -1}')$$);
SELECT count(*) AS partitions FROM parts WHERE parent = 'checked'::regclass;
-- The same on the fast path, where the partition exists.
SELECT * FROM partheal_append('checked', '{"v": 1}');
SELECT error_of($$SELECT partheal_append('checked', '{"v": -1}')$$);
-- partheal's own errors cross a handler the same way.
SELECT error_of($$SELECT partheal_append('checked', '{"nope": 1}')$$);
SELECT error_of($$SELECT partheal_append('checked', '[]')$$);

-- CONTEXT reads as PostgreSQL alone prints it: each caller's line once, even
-- after the error crossed partheal's boundary twice.
\set SHOW_CONTEXT always
CREATE FUNCTION wraps_append() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM partheal_append('outer_t', '{"v": "bad"}');
END $$;
SELECT wraps_append();
-- A handler that re-raises: the error outlives the subtransaction whose
-- memory held it. (007_memory checks its LOCATION.)
CREATE FUNCTION reraises() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM partheal_boundary_selftest('postgres');
EXCEPTION WHEN others THEN
  RAISE;
END $$;
SELECT reraises();
\set SHOW_CONTEXT errors
-- Copying a caught error can itself fail (out of memory); that error stops at
-- the boundary's own sigsetjmp frame and is reported, and the backend goes on.
SELECT partheal_boundary_selftest('copy_fails');
SELECT partheal_boundary_selftest('postgres');
SELECT 1 AS still_here;
