#!/usr/bin/env bash
# make demo: sets up the machine, starts a throwaway cluster with partheal
# preloaded, and shows a table with missing partitions healing as rows arrive,
# then the worker creating a partition ahead. Each step says what it shows.
source "$(dirname "$0")/lib.sh"

say "0. setting up: what this machine lacks, then partheal's build"
echo "Debian packages it lacks: apt-get, a few minutes the first time (its output is hidden)."
echo "partheal's build: about two minutes on 2 cores the first time, nothing after that."
install_packages
build_and_install
work=$(make_workdir)
start_cluster "$work" < /dev/null
# At the end: stop the cluster and remove everything this demo made.
trap 'as_pg pg_ctl -D "$CLUSTER_DIR/data" -m fast stop >/dev/null; rm -rf "$work"' EXIT

say "1. the heal: a message log partitioned by id"
cat <<'TEXT'
partheal manages message_log in partitions of 10 ids, aligned to multiples of
10: [20, 30), [30, 40), ... Before partheal managed it, someone made one
partition by hand, [0, 20), twice that size, and ids 1 to 19 were used: the
sequence stands at 19, so the next id, 20, has no partition yet.
Create-ahead is off for this table (mark_percent => NULL), so every partition
made below is made by the heal.
TEXT
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

say "a plain INSERT draws id 20 and finds no partition for it; partheal's insert gate has the worker make [20, 30) in the same statement, and the row lands there:"
psql_c -c "INSERT INTO message_log (topic) VALUES ('plain') RETURNING id, tableoid::regclass AS partition"
echo "The application changed nothing. Without the gate (SET partheal.heal_inserts = off) the"
echo "INSERT would fail with PostgreSQL's own error, no partition of relation \"message_log\"."

say "partheal_append heals the same way, for JSON writers and batches: a single row, a batch of 15 straddling two partitions, a transaction"
echo "Each call draws its ids, sees which have no partition, has the worker create those, and inserts."
psql_c -c "SELECT partheal_append('message_log', '{\"topic\": \"single\", \"body\": {\"n\": 1}}') AS id"
psql_c -c "SELECT array_agg(id) AS batch_ids FROM partheal_append('message_log',
             (SELECT jsonb_agg(jsonb_build_object('topic', 'batch', 'body', jsonb_build_object('n', g)))
                FROM generate_series(1, 15) g)) AS id"
psql_c -c "BEGIN" -c "SELECT partheal_append('message_log', '{\"topic\": \"tx\"}') AS id" \
       -c "SELECT partheal_append('message_log', '[{\"topic\": \"tx\"}, {\"topic\": \"tx\"}]') AS id" -c "COMMIT"
echo "partitions after:"
psql_c -c 'TABLE partitions'
echo "insert_heals counts the plain INSERTs whose partition the gate had made (id 20 needed [20, 30));"
echo "heals the partheal_append calls that had one made: the batch (ids 22 to 36: 30 to 36 needed [30, 40))."
echo "The single row and the transaction's rows fit partitions that existed by then: no heal."
psql_c -c "SELECT appends, rows_appended, heals, insert_heals, exhaustions FROM partheal_stats
            WHERE parent = 'message_log'::regclass"
say "what partheal wrote to the server log"
echo "PHL01: a heal (the ids without a partition, what the worker did, and whose statement healed);"
echo "PHL02: the worker created a partition."
grep -E 'PHL0[12]' "$work/server.log" | sed 's/^[^]]*] //'

say "2. create-ahead: an event stream, 100 ids a partition, the next one made at 80%"
psql_c -q <<'SQL'
\o /dev/null
CREATE TABLE events (id bigserial, kind text) PARTITION BY RANGE (id);
SELECT partheal_manage('events', 100);
SELECT count(*) FROM partheal_append('events', (SELECT jsonb_agg(jsonb_build_object('kind', 'e')) FROM generate_series(1, 80)));
SQL
echo "partheal_manage made [0, 100) to [400, 500) before it returned, before any row:"
echo "premake 4 (the default) keeps four partitions ahead of the sequence's position."
echo "80 rows appended into [0, 100), with no heal (heals = 0). Id 80 is that partition's"
echo "mark (80%): from then on the worker keeps four ahead of [100, 200), the partition the"
echo "ids reach next, so at its next poll it makes [500, 600). Waiting for it:"
for i in $(seq 50); do
  [ "$(psql_c -A -t -c "SELECT count(*) FROM pg_class WHERE relname = 'events_p500'")" = 1 ] && break
  sleep 0.1
done
psql_c -c "SELECT c.relname AS partition, pg_get_expr(c.relpartbound, c.oid) AS bound
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'events'::regclass ORDER BY 1"
echo "ahead_created: partitions the worker made before any row needed them; next_*: what it makes"
echo "next, and when (the stats are as the worker's last poll, once a second, saw them)."
for i in $(seq 50); do
  [ "$(psql_c -A -t -c "SELECT next_reason LIKE 'when ids reach 180%' FROM partheal_stats
                          WHERE parent = 'events'::regclass")" = t ] && break
  sleep 0.1
done
psql_c -x -c "SELECT parent, appends, rows_appended, heals, ahead_requested, ahead_created,
                     next_from, next_to, next_reason
                FROM partheal_stats WHERE parent = 'events'::regclass"

say "done"
cat <<TEXT
The throwaway cluster is stopped now, and its folder ($work) removed:
nothing of this demo is left on the machine but the installed extension.
To try partheal on a server of your own, add shared_preload_libraries =
'partheal' to postgresql.conf, restart, and follow "Quick start" in README.md:
CREATE EXTENSION partheal; then partheal_manage and partheal_append.
TEXT
