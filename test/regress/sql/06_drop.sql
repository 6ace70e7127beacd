-- Create-ahead is off for these tables (mark_percent NULL): the partitions
-- listed are the heal's alone. 07_ahead covers create-ahead.
-- DROP EXTENSION takes partheal's objects and registrations, and leaves the
-- tables and their partitions; CREATE EXTENSION again starts clean.
SELECT count(*) AS registrations FROM partheal_config;
-- This session has the registration cached; dropping the extension must
-- forget it here too, not only in new sessions.
SELECT count(*) FROM partheal_append('msg', '{}');
SELECT count(*) AS msg_rows FROM msg;
DROP EXTENSION partheal;
SELECT count(*) AS msg_rows FROM msg;
SELECT count(*) AS msg_partitions FROM pg_inherits WHERE inhparent = 'msg'::regclass;
SELECT partheal_append('msg', '{}');
CREATE EXTENSION partheal;
SELECT count(*) AS registrations FROM partheal_config;
SELECT * FROM partheal_append('msg', '{}');
SELECT partheal_manage('msg', 10, NULL);
SELECT * FROM partheal_append('msg', '{"id": 5000}');
SELECT partition FROM parts WHERE partition = 'msg_p5000';

-- User code run by an append's INSERT (here a trigger) changes registrations
-- and appends to another table: the nested call drops every cached entry,
-- yet the outer append's prepared INSERT, still running, stays alive.
CREATE TABLE nest_a (id bigserial, v int) PARTITION BY RANGE (id);
CREATE TABLE nest_b (id bigserial, v int) PARTITION BY RANGE (id);
SELECT partheal_manage('nest_a', 100, NULL);
SELECT partheal_manage('nest_b', 100, NULL);
CREATE FUNCTION churn_registry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM partheal_unmanage('nest_b');
  PERFORM partheal_manage('nest_b', 100, NULL);
  PERFORM partheal_append('nest_b', jsonb_build_object('v', NEW.v));
  RETURN NEW;
END $$;
CREATE TRIGGER churn BEFORE INSERT ON nest_a FOR EACH ROW EXECUTE FUNCTION churn_registry();
SELECT * FROM partheal_append('nest_a', '{"v": 1}');
SELECT * FROM partheal_append('nest_a', '[{"v": 2}, {"v": 3}]');
SELECT * FROM partheal_append('nest_a', '{"v": 4}');
SELECT (SELECT string_agg(v::text, ',' ORDER BY v) FROM nest_a) AS a,
       (SELECT string_agg(v::text, ',' ORDER BY v) FROM nest_b) AS b;
