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
