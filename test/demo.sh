#!/usr/bin/env bash
# make demo: sets up the machine, starts a throwaway cluster with partheal
# preloaded, and shows a table with missing partitions healing as rows arrive.
source "$(dirname "$0")/lib.sh"

install_packages
build_and_install
work=$(make_workdir)
start_cluster "$work" < /dev/null

say "1. the heal: a message log partitioned by id, 10 ids a partition, the sequence at 19, one partition"
echo "(create-ahead is off for this table, so that every partition below is the heal's)"
psql_c -q <<'SQL'
\o /dev/null
CREATE EXTENSION partheal;
CREATE TABLE message_log (id bigserial, topic text, body jsonb) PARTITION BY RANGE (id);
CREATE TABLE message_log_p0 PARTITION OF message_log FOR VALUES FROM (0) TO (20);
SELECT setval('message_log_id_seq', 19);
SELECT partheal_manage('message_log', 10, mark_percent => NULL);
CREATE VIEW partitions AS
  SELECT c.relname AS partition, pg_get_expr(c.relpartbound, c.oid) AS bound,
         (SELECT count(*) FROM message_log m WHERE m.tableoid = c.oid) AS rows
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent = 'message_log'::regclass ORDER BY c.relname COLLATE "C";
SQL
echo "partitions before:"
psql_c -c 'TABLE partitions'

say "a plain INSERT past the last partition fails:"
psql_c -c "INSERT INTO message_log (topic) VALUES ('plain')" 2>&1 || true
psql_c -q -c "SELECT setval('message_log_id_seq', 19)" >/dev/null

say "partheal_append heals instead: a single row, a batch straddling two partitions, a transaction"
psql_c -c "SELECT partheal_append('message_log', '{\"topic\": \"single\", \"body\": {\"n\": 1}}') AS id"
psql_c -c "SELECT array_agg(id) AS batch_ids FROM partheal_append('message_log',
             (SELECT jsonb_agg(jsonb_build_object('topic', 'batch', 'body', jsonb_build_object('n', g)))
                FROM generate_series(1, 15) g)) AS id"
psql_c -c "BEGIN" -c "SELECT partheal_append('message_log', '{\"topic\": \"tx\"}') AS id" \
       -c "SELECT partheal_append('message_log', '[{\"topic\": \"tx\"}, {\"topic\": \"tx\"}]') AS id" -c "COMMIT"
echo "partitions after:"
psql_c -c 'TABLE partitions'
say "what partheal wrote to the server log"
grep -E 'PHL0[12]' "$work/server.log" | sed 's/^[^]]*] //'

say "2. create-ahead: an event stream, 100 ids a partition, the next one made at 80%"
psql_c -q <<'SQL'
\o /dev/null
CREATE TABLE events (id bigserial, kind text) PARTITION BY RANGE (id);
SELECT partheal_manage('events', 100);
SELECT count(*) FROM partheal_append('events', (SELECT jsonb_agg(jsonb_build_object('kind', 'e')) FROM generate_series(1, 80)));
SQL
echo "80 rows appended; id 80 is partition 0's mark. Waiting for the worker:"
for i in $(seq 50); do
  [ "$(psql_c -A -t -c "SELECT count(*) FROM pg_class WHERE relname = 'events_p100'")" = 1 ] && break
  sleep 0.1
done
psql_c -c "SELECT c.relname AS partition, pg_get_expr(c.relpartbound, c.oid) AS bound
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'events'::regclass ORDER BY 1"
psql_c -c "SELECT parent, appends, rows_appended, heals, ahead_requested, ahead_created, watermark
             FROM partheal_stats WHERE parent = 'events'::regclass"
