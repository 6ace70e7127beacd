-- DROP EXTENSION leaves every table writable: the id defaults that
-- nextval_default => true made partheal_nextval go back to the plain
-- nextval of the same sequence first, in the DROP's transaction, so the
-- plain DROP works and CASCADE drops no default. Runs last: it drops the
-- extension. (A view an earlier test built on partheal_stats would stop the
-- plain DROP.)
DROP VIEW ah_stats;
CREATE TABLE un (id bigserial, v int) PARTITION BY RANGE (id);
CREATE TABLE un_p0 PARTITION OF un FOR VALUES FROM (0) TO (100);
SELECT partheal_manage('un', 100, 80, true, premake => 0);
-- A partition made by hand copies the parent's default.
CREATE TABLE un_p100 PARTITION OF un FOR VALUES FROM (100) TO (200);
SELECT adrelid::regclass AS "table", pg_get_expr(adbin, adrelid) AS id_default
  FROM pg_attrdef WHERE adrelid IN ('un'::regclass, 'un_p100'::regclass) ORDER BY 1;
-- A DROP that fails puts nothing back: the defaults stay partheal's.
BEGIN;
DROP EXTENSION partheal, no_such_extension;
ROLLBACK;
SELECT adrelid::regclass AS "table", pg_get_expr(adbin, adrelid) AS id_default
  FROM pg_attrdef WHERE adrelid IN ('un'::regclass, 'un_p100'::regclass) ORDER BY 1;
DROP EXTENSION partheal;
SELECT adrelid::regclass AS "table", pg_get_expr(adbin, adrelid) AS id_default
  FROM pg_attrdef WHERE adrelid IN ('un'::regclass, 'un_p100'::regclass) ORDER BY 1;
INSERT INTO un (v) VALUES (1) RETURNING id;
-- CASCADE, as PostgreSQL's HINT suggests where a DROP fails: the same.
CREATE EXTENSION partheal;
SELECT partheal_manage('un', 100, 80, true, premake => 0);
SELECT pg_get_expr(adbin, adrelid) AS id_default FROM pg_attrdef WHERE adrelid = 'un'::regclass;
DROP EXTENSION partheal CASCADE;
SELECT pg_get_expr(adbin, adrelid) AS id_default FROM pg_attrdef WHERE adrelid = 'un'::regclass;
INSERT INTO un (v) VALUES (3) RETURNING id;
SELECT count(*) FROM un;
-- IF EXISTS of an extension that is gone: nothing to do.
DROP EXTENSION IF EXISTS partheal;
-- The README's uninstall, as it is written.
CREATE EXTENSION partheal;
SELECT partheal_manage('un', 100, 80, true, premake => 0);
SELECT partheal_unmanage(parent) FROM partheal_config;   -- optional
DROP EXTENSION partheal;
INSERT INTO un (v) VALUES (4) RETURNING id;
DROP TABLE un;
CREATE EXTENSION partheal;
