-- The extension installs, and its objects are where the README says.
-- Before it, a role with CREATE on public plants operators that an
-- extension script could bind to by inexact match (there is no exact
-- regclass = regclass in pg_catalog); partheal's script qualifies every
-- operator, so none is bound, and each can be dropped again below.
CREATE FUNCTION public.planted_eq(regclass, regclass) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE NOTICE 'planted operator ran as %', current_user; RETURN $1::oid = $2::oid; END $$;
CREATE OPERATOR public.= (FUNCTION = public.planted_eq, LEFTARG = regclass, RIGHTARG = regclass);
CREATE FUNCTION public.planted_gt(bigint, integer) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE NOTICE 'planted operator ran as %', current_user; RETURN $1 > $2::bigint; END $$;
CREATE OPERATOR public.> (FUNCTION = public.planted_gt, LEFTARG = bigint, RIGHTARG = integer);
CREATE EXTENSION partheal;
SELECT count(*) AS stats_rows FROM partheal_stats;
SELECT count(*) AS objects_using_planted_operators FROM pg_depend d
  JOIN pg_operator o ON d.refclassid = 'pg_operator'::regclass AND d.refobjid = o.oid
 WHERE o.oprnamespace = 'public'::regnamespace;
DROP OPERATOR public.= (regclass, regclass);
DROP OPERATOR public.> (bigint, integer);
DROP FUNCTION public.planted_eq(regclass, regclass), public.planted_gt(bigint, integer);
SELECT extname, extversion FROM pg_extension WHERE extname = 'partheal';
SELECT p.oid::regprocedure AS function, p.prosecdef
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'partheal'
 ORDER BY p.oid::regprocedure::text COLLATE "C";
SHOW partheal.max_retries;
SHOW partheal.ddl_lock_timeout;
SHOW partheal.heal_wait_timeout;
-- Unknown settings under the prefix are refused, so a typo is not silent.
SET partheal.max_retrys = 5;
-- pg_dump dumps the registrations.
SELECT c.relname, x.extcondition
  FROM pg_extension x, unnest(x.extconfig) AS cfg(oid) JOIN pg_class c ON c.oid = cfg.oid
 WHERE x.extname = 'partheal';
