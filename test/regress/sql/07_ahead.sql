-- Create-ahead: an append whose ids include its partition's mark (80% by
-- default) makes the worker create the next partition; the append does not
-- wait for it. partheal_stats shows the watermark and the counters.
-- Registered first with create-ahead off, so that the worker's poll, which
-- makes a new table's first partition, leaves the first one to the heal.
CREATE TABLE ah (id bigserial, v int) PARTITION BY RANGE (id);
SELECT partheal_manage('ah', 10, NULL);
-- Waits, boundedly, for the worker to make a partition. It reads pg_class
-- with a fresh snapshot each time: to_regclass would keep answering from a
-- cached negative lookup within this one statement.
CREATE FUNCTION wait_for_partition(name text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..400 LOOP
    IF EXISTS (SELECT 1 FROM pg_class WHERE relname = name) THEN RETURN true; END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN false;
END $$;
-- ahead_created is left out: the worker's catch-up poll may make a partition
-- (counted there too) before the mark's request or the heal does, as its
-- timing allows; which one made it is not what this file tests.
CREATE VIEW ah_stats AS
  SELECT appends, rows_appended, heals, exhaustions, ahead_requested,
         ahead_failed, watermark, last_heal IS NOT NULL AS healed_once
    FROM partheal_stats WHERE parent = 'ah'::regclass;
SELECT * FROM ah_stats;

-- Ids 1 to 7 are below partition 0's mark (id 8): a heal, no request.
SELECT count(*) FROM partheal_append('ah', '[{}, {}, {}, {}, {}, {}, {}]');
SELECT partheal_manage('ah', 10, premake => 0);
SELECT parent, partition_size, mark_percent FROM partheal_config WHERE parent = 'ah'::regclass;
SELECT * FROM ah_stats;
-- Id 8 is the mark: partition 1 is requested, and the append returns at once.
SELECT * FROM partheal_append('ah', '{}');
SELECT watermark, ahead_requested FROM ah_stats;
SELECT wait_for_partition('ah_p10') AS created_ahead;
-- Ids 9 to 15 find their partition there: no heal.
SELECT count(*) FROM partheal_append('ah', '[{}, {}, {}, {}, {}, {}, {}]');
SELECT * FROM ah_stats;

-- A transaction that crosses the mark and rolls back burns its ids, and the
-- early partition stays, empty and harmless.
BEGIN;
SELECT * FROM partheal_append('ah', '[{}, {}, {}]');
ROLLBACK;
SELECT wait_for_partition('ah_p20') AS created_ahead;
SELECT count(*) FROM ah_p20;
-- A mark already claimed requests nothing again.
SELECT * FROM partheal_append('ah', '{"id": 18}');
SELECT watermark, ahead_requested FROM ah_stats;
SELECT ahead_created >= 2 AS made_both_ahead FROM partheal_stats WHERE parent = 'ah'::regclass;

-- Another mark percent: 50 puts partition 0's mark at id 5.
CREATE TABLE half (id bigserial) PARTITION BY RANGE (id);
SELECT partheal_manage('half', 10, 50, premake => 0);
SELECT count(*) FROM partheal_append('half', '[{}, {}, {}, {}, {}]');
-- The mark at id 5 claims partition 1 (the watermark); it requests it
-- unless the worker's catch-up, which saw the five draws while the append
-- waited for its heal of partition 0, made it first.
SELECT watermark, ahead_requested <= 1 AS one_request_at_most FROM partheal_stats WHERE parent = 'half'::regclass;
SELECT wait_for_partition('half_p10') AS created_ahead;

-- mark_percent NULL turns create-ahead off for a table.
CREATE TABLE no_ahead (id bigserial) PARTITION BY RANGE (id);
SELECT partheal_manage('no_ahead', 10, NULL);
SELECT count(*) FROM partheal_append('no_ahead', '[{}, {}, {}, {}, {}, {}, {}, {}, {}]');
SELECT watermark, ahead_requested, heals FROM partheal_stats WHERE parent = 'no_ahead'::regclass;

-- A bad mark percent changes nothing.
\set VERBOSITY verbose
SELECT partheal_manage('ah', 10, 0);
SELECT partheal_manage('ah', 10, 100);
\set VERBOSITY default
SELECT partheal_manage('ah', 10, -1);
SELECT mark_percent FROM partheal_config WHERE parent = 'ah'::regclass;

-- Exhaustions are counted. Create-ahead is off for this table, so the
-- worker's catch-up cannot fill the range before the test shapes it.
CREATE TABLE ex (id bigserial) PARTITION BY RANGE (id);
SELECT partheal_manage('ex', 10, NULL);
SET partheal.max_retries = 0;
-- A trigger fails the insert as routing does (04_heal): every heal is lost.
CREATE FUNCTION ex_lost() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'no partition of relation "ex" found for row'
    USING ERRCODE = 'check_violation', TABLE = 'ex', SCHEMA = 'public';
END $$;
CREATE TRIGGER lost BEFORE INSERT ON ex FOR EACH ROW EXECUTE FUNCTION ex_lost();
SELECT * FROM partheal_append('ex', '[{"id": 31}, {"id": 36}]');
DROP TRIGGER lost ON ex;
RESET partheal.max_retries;
SELECT exhaustions FROM partheal_stats WHERE parent = 'ex'::regclass;

-- The watermark follows the ids in use. A given id far ahead of the
-- sequence, even at its partition's mark, claims nothing: the marks of the
-- partitions the sequence will reach first still work. (After the first,
-- the watermark and not ahead_requested: the worker's poll keeps one
-- partition ahead, premake 0 or not, and when it comes first the claim
-- finds the partition made and requests nothing.)
CREATE TABLE far (id bigserial) PARTITION BY RANGE (id);
SELECT partheal_manage('far', 10, premake => 0);
SELECT * FROM partheal_append('far', '{"id": 1008}');
SELECT watermark, ahead_requested FROM partheal_stats WHERE parent = 'far'::regclass;
SELECT count(*) FROM partheal_append('far', '[{}, {}, {}, {}, {}, {}, {}, {}]');
SELECT watermark FROM partheal_stats WHERE parent = 'far'::regclass;
SELECT wait_for_partition('far_p10') AS created_ahead;
-- A given id the sequence has reached does count, as a drawn one would.
-- (The sequence's own last draw: the worker's poll, which can come in
-- between, reads the same position and keeps the claim.)
SELECT setval('far_id_seq', 18);
SELECT * FROM partheal_append('far', '{"id": 18}');
SELECT watermark FROM partheal_stats WHERE parent = 'far'::regclass;

-- A new partition size renumbers the partitions, so the watermark starts
-- again: partition 1 under size 20 is claimed, although partition 1 under
-- size 10 was. (Not ahead_requested: the worker's poll keeps one partition
-- ahead too, premake 0 or not, and when it comes first the claim finds the
-- partition made and requests nothing.)
CREATE TABLE resized (id bigserial) PARTITION BY RANGE (id);
SELECT partheal_manage('resized', 10, premake => 0);
SELECT count(*) FROM partheal_append('resized', '[{}, {}, {}, {}, {}, {}, {}, {}, {}]');
SELECT watermark FROM partheal_stats WHERE parent = 'resized'::regclass;
SELECT partheal_manage('resized', 20, 50, premake => 0);
SELECT watermark FROM partheal_stats WHERE parent = 'resized'::regclass;
SELECT * FROM partheal_append('resized', '{}');
SELECT watermark FROM partheal_stats WHERE parent = 'resized'::regclass;
SELECT wait_for_partition('resized_p20') AS created_ahead;
DROP TABLE far, resized;

-- A DEFAULT partition attached after registration: rows without a partition
-- go there, as with a plain INSERT; partheal_stats shows it, and
-- create-ahead fails (counted, and in the log) rather than scan it.
-- (One transaction: the worker's poll never sees the table without its
-- DEFAULT, and so never makes it a first partition.)
CREATE TABLE late_def (id bigserial) PARTITION BY RANGE (id);
BEGIN;
SELECT partheal_manage('late_def', 10, premake => 0);
CREATE TABLE late_def_d PARTITION OF late_def DEFAULT;
COMMIT;
SELECT count(*) FROM partheal_append('late_def', '[{}, {}, {}, {}, {}, {}, {}, {}, {}]');
SELECT default_partition, heals, ahead_requested FROM partheal_stats WHERE parent = 'late_def'::regclass;
CREATE FUNCTION wait_for_failed(t regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  FOR i IN 1..200 LOOP
    SELECT ahead_failed INTO n FROM partheal_stats WHERE parent = t;
    IF n > 0 THEN RETURN n; END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN n;
END $$;
SELECT wait_for_failed('late_def') AS ahead_failed;
SELECT count(*) AS in_default FROM late_def_d;
SELECT count(*) AS partitions FROM pg_inherits WHERE inhparent = 'late_def'::regclass;
DROP TABLE late_def;

-- What the worker creates next, and when, as its last poll saw it; the
-- watermark as an id (ahead_claimed_to); the worker's database by name.
CREATE TABLE nxt (id bigserial) PARTITION BY RANGE (id);
CREATE TABLE nxt_p0 PARTITION OF nxt FOR VALUES FROM (0) TO (10);
SELECT partheal_manage('nxt', 10, premake => 0);
CREATE FUNCTION wait_for_reason(t regclass, pattern text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  FOR i IN 1..200 LOOP
    SELECT next_reason INTO r FROM partheal_stats WHERE parent = t;
    IF r ~ pattern THEN RETURN r; END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN r;
END $$;
SELECT wait_for_reason('nxt', 'when ids reach 8');
SELECT next_from, next_to, watermark, ahead_claimed_to FROM partheal_stats WHERE parent = 'nxt'::regclass;
-- Past the mark, the mark claims partition 1 (ids up to 20), and the next is
-- partition 2, at the mark of partition 1.
SELECT count(*) FROM partheal_append('nxt', '[{}, {}, {}, {}, {}, {}, {}, {}]');
SELECT wait_for_reason('nxt', 'when ids reach 18');
SELECT next_from, next_to, watermark, ahead_claimed_to FROM partheal_stats WHERE parent = 'nxt'::regclass;
SELECT partheal_manage('nxt', 10, NULL);
SELECT wait_for_reason('nxt', 'off');
SELECT datname = current_database() AS named FROM partheal_workers()
 WHERE datid = (SELECT oid FROM pg_database WHERE datname = current_database());
DROP TABLE nxt;
DROP FUNCTION wait_for_reason(regclass, text);

-- premake (default 4) is the least headroom of an id-keyed table: the
-- partition of the sequence position and the 4 after it, made before
-- partheal_manage returns, in its transaction.
CREATE TABLE floor_t (id bigserial, v int) PARTITION BY RANGE (id);
BEGIN;
SELECT partheal_manage('floor_t', 10);
SELECT partition, bound FROM parts WHERE parent = 'floor_t'::regclass;
ROLLBACK;
SELECT count(*) AS after_rollback FROM parts WHERE parent = 'floor_t'::regclass;
-- From a drawn position: partition 3 holds id 35, so 3 to 7.
SELECT setval('floor_t_id_seq', 35);
SELECT partheal_manage('floor_t', 10);
SELECT partition, bound FROM parts WHERE parent = 'floor_t'::regclass;
-- With create-ahead off, nothing is made ahead, at registration or later.
CREATE TABLE floor_off (id bigserial, v int) PARTITION BY RANGE (id);
SELECT partheal_manage('floor_off', 10, NULL);
SELECT count(*) FROM parts WHERE parent = 'floor_off'::regclass;
SELECT partheal_unmanage('floor_t'), partheal_unmanage('floor_off');
