-- partheal_manage accepts RANGE(id) tables whose id comes from a sequence,
-- and refuses everything else with a SQLSTATE, changing nothing.
\set VERBOSITY default
CREATE TABLE good_bigserial (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE good_serial (id serial, body text) PARTITION BY RANGE (id);
CREATE TABLE good_smallserial (id smallserial, body text) PARTITION BY RANGE (id);
CREATE TABLE good_identity (id bigint GENERATED ALWAYS AS IDENTITY, body text) PARTITION BY RANGE (id);
CREATE SEQUENCE own_seq;
CREATE TABLE good_own_default (id bigint DEFAULT nextval('own_seq'), body text) PARTITION BY RANGE (id);
SELECT partheal_manage('good_bigserial', 10);
SELECT partheal_manage('good_serial', 100);
SELECT partheal_manage('good_smallserial', 100);
SELECT partheal_manage('good_identity', 1000);
SELECT partheal_manage('good_own_default', 5);
SELECT parent, partition_size FROM partheal_config ORDER BY parent::text;

-- Registering again updates the size.
SELECT partheal_manage('good_bigserial', 20);
SELECT partition_size FROM partheal_config WHERE parent = 'good_bigserial'::regclass;

\set VERBOSITY verbose
-- Not partitioned at all.
CREATE TABLE plain (id bigserial);
SELECT partheal_manage('plain', 10);
-- LIST and HASH.
CREATE TABLE by_list (id bigserial, k int) PARTITION BY LIST (k);
SELECT partheal_manage('by_list', 10);
CREATE TABLE by_hash (id bigserial) PARTITION BY HASH (id);
SELECT partheal_manage('by_hash', 10);
-- A key of several columns.
CREATE TABLE two_keys (id bigserial, k int) PARTITION BY RANGE (id, k);
SELECT partheal_manage('two_keys', 10);
-- An expression key.
CREATE TABLE expr_key (id bigserial) PARTITION BY RANGE ((id * 2));
SELECT partheal_manage('expr_key', 10);
-- A key that is not an integer.
CREATE TABLE text_key (id text DEFAULT 'x') PARTITION BY RANGE (id);
SELECT partheal_manage('text_key', 10);
CREATE TABLE time_key (t timestamptz DEFAULT now()) PARTITION BY RANGE (t);
SELECT partheal_manage('time_key', 10);
-- An integer key with no sequence behind it.
CREATE TABLE no_seq (id bigint) PARTITION BY RANGE (id);
SELECT partheal_manage('no_seq', 10);
CREATE TABLE const_default (id bigint DEFAULT 7) PARTITION BY RANGE (id);
SELECT partheal_manage('const_default', 10);
-- A default that is more than nextval(): partheal stores the id it draws,
-- where a plain INSERT would store 1007, 2007, ...
CREATE TABLE odd_default (id bigint DEFAULT nextval('own_seq') * 1000 + 7) PARTITION BY RANGE (id);
SELECT partheal_manage('odd_default', 10);
-- A DEFAULT partition would take every row, so nothing could be healed.
CREATE TABLE with_default (id bigserial) PARTITION BY RANGE (id);
CREATE TABLE with_default_d PARTITION OF with_default DEFAULT;
SELECT partheal_manage('with_default', 10);
-- NULLs and sizes below one.
SELECT partheal_manage(NULL, 10);
SELECT partheal_manage('good_serial', NULL::bigint);
SELECT partheal_manage('good_serial', 0);
SELECT partheal_manage('good_serial', -5);
\set VERBOSITY default
-- A table that does not exist fails in the regclass cast.
SELECT partheal_manage('no_such_table', 10);
-- Nothing above changed the registrations.
SELECT parent, partition_size FROM partheal_config ORDER BY parent::text;

-- The caller must own the table: INSERT rights are not enough.
CREATE ROLE partheal_writer;
GRANT INSERT, SELECT ON good_serial TO partheal_writer;
SET ROLE partheal_writer;
SELECT partheal_manage('good_serial', 7);
\echo :LAST_ERROR_SQLSTATE
SELECT partheal_unmanage('good_serial');
-- Nor can the config table be written around the functions.
INSERT INTO partheal_config VALUES ('good_serial', 1);
RESET ROLE;

-- partheal_unmanage removes the registration; twice is an error.
SELECT partheal_unmanage('good_own_default');
SELECT partheal_unmanage('good_own_default');
\echo :LAST_ERROR_SQLSTATE
SELECT partheal_unmanage(NULL);
-- A dropped table leaves no registration behind.
DROP TABLE good_smallserial;
SELECT parent, partition_size FROM partheal_config ORDER BY parent::text;

-- A temporary table: the worker cannot see it.
CREATE TEMP TABLE scratch (id bigserial) PARTITION BY RANGE (id);
SELECT partheal_manage('scratch', 10);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS registered FROM partheal_config WHERE parent::text LIKE '%scratch%';

-- partheal_unmanage forgets the table's counters and watermark only when it
-- commits: after a ROLLBACK, or a rolled-back savepoint, they stay.
CREATE TABLE kept (id bigserial) PARTITION BY RANGE (id);
SELECT partheal_manage('kept', 10, NULL);
SELECT count(*) FROM partheal_append('kept', '[{}, {}, {}]');
BEGIN;
SELECT partheal_unmanage('kept');
ROLLBACK;
SELECT appends, rows_appended FROM partheal_stats WHERE parent = 'kept'::regclass;
BEGIN;
SAVEPOINT s;
SELECT partheal_unmanage('kept');
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT appends, rows_appended FROM partheal_stats WHERE parent = 'kept'::regclass;
-- Unmanaged and managed again in one transaction: the state stays.
BEGIN;
SELECT partheal_unmanage('kept');
SELECT partheal_manage('kept', 10, NULL);
COMMIT;
SELECT appends, rows_appended FROM partheal_stats WHERE parent = 'kept'::regclass;
-- Committed: gone, and managed again it starts from zero.
SELECT partheal_unmanage('kept');
SELECT partheal_manage('kept', 10, NULL);
SELECT appends, rows_appended FROM partheal_stats WHERE parent = 'kept'::regclass;
DROP TABLE kept;
