-- partheal 0.3 -> 0.4: partheal_boundary_selftest leaves the extension. It
-- was never for users; the library keeps the C function, and the regression
-- test that uses it (test/regress/sql/05_boundary.sql) declares it itself.
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.4'" to load this file. \quit

DROP FUNCTION @extschema@.partheal_boundary_selftest(text);
