-- The extension installs, and its objects are where the README says.
CREATE EXTENSION partheal;
SELECT extname, extversion FROM pg_extension WHERE extname = 'partheal';
SELECT p.oid::regprocedure AS function, p.prosecdef
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'partheal'
 ORDER BY p.proname;
SHOW partheal.max_retries;
SHOW partheal.ddl_lock_timeout;
SHOW partheal.heal_wait_timeout;
-- Unknown settings under the prefix are refused, so a typo is not silent.
SET partheal.max_retrys = 5;
-- pg_dump dumps the registrations.
SELECT c.relname, x.extcondition
  FROM pg_extension x, unnest(x.extconfig) AS cfg(oid) JOIN pg_class c ON c.oid = cfg.oid
 WHERE x.extname = 'partheal';
