# Sourced by test/bench/run.sh, on its cluster (psql_b, pgbench_c, say):
# the worker's upkeep against pg_partman 4.7's, each under a writer that
# inserts every 5 ms and times each insert.
#   retention: 30 daily windows of BENCH_UPKEEP_ROWS rows (100,000) past a
#     5-day horizon. partheal's worker detaches and drops them, one per
#     poll: on a table without DEFAULT by DETACH CONCURRENTLY, on one with
#     a DEFAULT by a plain DETACH; pg_partman's run_maintenance drops them
#     in one call.
#   drain: 2 x BENCH_UPKEEP_ROWS back-dated rows in DEFAULT, four windows
#     of them. partheal's worker moves them out; pg_partman's
#     partition_data_proc does, as its docs say to.
# Reported: the writer's longest insert and its errors, how long the parent
# was held (partheal: the longest PHL09 hold; pg_partman: the
# run_maintenance call, whose drops hold the parent to its end), and for
# the drain a reader's lowest count of the table (never below what it
# held before).

upkeep_rows=${BENCH_UPKEEP_ROWS:-100000}
declare -A up_worst up_errors up_writes up_hold up_low up_took

# upkeep_writer TABLE: starts the writer; upkeep_stop TABLE: stops it and
# reads its figures into up_*[TABLE].
upkeep_writer() {
  local t=$1
  psql_b -c "SET client_min_messages = warning" -c "CREATE TABLE IF NOT EXISTS upkeep_flag (t text, stop boolean)" \
         -c "CREATE TABLE IF NOT EXISTS upkeep_writer (t text, writes int, errors int, worst float8)" >/dev/null
  psql_b >/dev/null <<SQL &
DO \$\$
DECLARE t0 timestamptz; worst float8 := 0; errs int := 0; n int := 0;
BEGIN
  LOOP
    EXIT WHEN EXISTS (SELECT FROM upkeep_flag WHERE t = '$t' AND stop);
    t0 := clock_timestamp();
    BEGIN
      INSERT INTO $t (body) VALUES ('writer');
    EXCEPTION WHEN OTHERS THEN errs := errs + 1;
    END;
    worst := greatest(worst, extract(epoch FROM clock_timestamp() - t0) * 1000);
    n := n + 1;
    COMMIT;
    PERFORM pg_sleep(0.005);
  END LOOP;
  INSERT INTO upkeep_writer VALUES ('$t', n, errs, worst);
END \$\$;
SQL
  upkeep_pid=$!
}
upkeep_stop() {
  local t=$1
  psql_b -c "INSERT INTO upkeep_flag VALUES ('$t', true)" >/dev/null
  wait "$upkeep_pid" || true
  read -r up_writes[$t] up_errors[$t] up_worst[$t] < <(psql_b -F ' ' -c "SELECT writes, errors, round(worst::numeric, 1) FROM upkeep_writer WHERE t = '$t'")
}
# upkeep_reader TABLE: counts the table every 50 ms until stopped, keeping
# the lowest count.
upkeep_reader() {
  local t=$1
  psql_b -c "SET client_min_messages = warning" -c "CREATE TABLE IF NOT EXISTS upkeep_reader (t text, low bigint)" >/dev/null
  psql_b >/dev/null <<SQL &
DO \$\$
DECLARE low bigint; n bigint;
BEGIN
  LOOP
    EXIT WHEN EXISTS (SELECT FROM upkeep_flag WHERE t = '$t reader' AND stop);
    SELECT count(*) INTO n FROM $t;
    low := least(coalesce(low, n), n);
    COMMIT;
    PERFORM pg_sleep(0.05);
  END LOOP;
  INSERT INTO upkeep_reader VALUES ('$t', low);
END \$\$;
SQL
  upkeep_reader_pid=$!
}
upkeep_reader_stop() {
  local t=$1
  psql_b -c "INSERT INTO upkeep_flag VALUES ('$t reader', true)" >/dev/null
  wait "$upkeep_reader_pid" || true
  up_low[$t]=$(psql_b -c "SELECT low FROM upkeep_reader WHERE t = '$t'")
}

# 36 daily windows, from 35 days ago to today, in UTC; the 30 oldest get
# the rows, and are past the horizon of 5 days (the window of 5 days ago
# reaches past it).
upkeep_fill() {
  local t=$1
  psql_b >/dev/null <<SQL
SET TimeZone = 'UTC';
INSERT INTO $t (at, body)
SELECT date_trunc('day', now()) - (d || ' days')::interval + (i % 86400) * interval '1 second', 'old'
  FROM generate_series(6, 35) d, generate_series(1, $upkeep_rows) i;
SQL
}

say "retention: 30 daily windows of $upkeep_rows rows past a 5-day horizon, a writer every 5 ms"
# ret_ph has no DEFAULT partition: DETACH CONCURRENTLY. ret_phd has one,
# which rules CONCURRENTLY out: the plain DETACH under polled locks.
psql_b >/dev/null <<'SQL'
SET TimeZone = 'UTC';
CREATE TABLE ret_ph (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
CREATE TABLE ret_phd (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
CREATE TABLE ret_phd_default PARTITION OF ret_phd DEFAULT;
DO $$ DECLARE d int; t text; BEGIN FOREACH t IN ARRAY ARRAY['ret_ph', 'ret_phd'] LOOP FOR d IN 0 .. 35 LOOP
  EXECUTE format('CREATE TABLE %s_%s PARTITION OF %s FOR VALUES FROM (%L) TO (%L)', t, d, t,
                 date_trunc('day', now()) - d * interval '1 day', date_trunc('day', now()) - (d - 1) * interval '1 day');
END LOOP; END LOOP; END $$;
CREATE TABLE ret_pm (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
SELECT partman.create_parent('public.ret_pm', 'at', 'native', 'daily', p_premake := 1,
                             p_start_partition := (date_trunc('day', now()) - interval '35 days')::text);
UPDATE partman.part_config SET automatic_maintenance = 'off' WHERE parent_table = 'public.ret_pm';
SQL
upkeep_fill ret_ph; upkeep_fill ret_phd; upkeep_fill ret_pm
psql_b -c 'VACUUM ANALYZE ret_ph, ret_phd, ret_pm' >/dev/null
# upkeep_retention TABLE: partheal's worker retires its 30 windows under the
# writer; the longest hold is the longest PHL09 "locked for" (for a window
# detached concurrently, "held for": the parent's SHARE UPDATE EXCLUSIVE,
# against no writer, up to the first commit of DETACH CONCURRENTLY).
declare -A up_dropped up_left
upkeep_retention() {
  local t=$1 log_from i
  log_from=$(wc -l < "$work/server.log")
  upkeep_writer "$t"
  sleep 1
  t0=$(date +%s%N)
  psql_b -c "SELECT partheal_manage('$t', interval '1 day', premake => 1, retention => interval '5 days')" >/dev/null
  for i in $(seq 600); do
    [ "$(psql_b -c "SELECT dropped_windows FROM partheal_stats WHERE parent = '$t'::regclass")" -ge 30 ] && break
    sleep 0.1
  done
  up_took[$t]=$(( ($(date +%s%N) - t0) / 1000000 ))
  sleep 1
  upkeep_stop "$t"
  up_hold[$t]=$(tail -n +"$((log_from + 1))" "$work/server.log" | grep "PHL09 retention detached \"public\.${t}_[0-9]*\"" |
    sed -n 's/.* \(locked\|held\) for \([0-9]*\) ms.*/\2/p' | sort -n | tail -1)
  up_dropped[$t]=$(psql_b -c "SELECT dropped_windows FROM partheal_stats WHERE parent = '$t'::regclass")
  up_left[$t]=$(psql_b -c "SELECT count(*) FROM $t WHERE body = 'old'")
}
upkeep_retention ret_ph
upkeep_retention ret_phd
upkeep_writer ret_pm
sleep 1
t0=$(date +%s%N)
psql_b -c "UPDATE partman.part_config SET retention = '5 days', retention_keep_table = false WHERE parent_table = 'public.ret_pm'" \
       -c "SELECT partman.run_maintenance('public.ret_pm')" >/dev/null
up_took[ret_pm]=$(( ($(date +%s%N) - t0) / 1000000 ))
up_hold[ret_pm]=${up_took[ret_pm]}
sleep 1
upkeep_stop ret_pm
up_left[ret_pm]=$(psql_b -c "SELECT count(*) FROM ret_pm WHERE body = 'old'")
for t in ret_ph ret_phd; do
  echo "partheal ($t): ${up_dropped[$t]} windows in ${up_took[$t]} ms, writer ${up_writes[$t]} inserts," \
       "${up_errors[$t]} errors, longest ${up_worst[$t]} ms; longest hold ${up_hold[$t]} ms; old rows left ${up_left[$t]}"
done
echo "pg_partman: run_maintenance ${up_took[ret_pm]} ms, writer ${up_writes[ret_pm]} inserts," \
     "${up_errors[ret_pm]} errors, longest ${up_worst[ret_pm]} ms; old rows left ${up_left[ret_pm]}"

say "drain: $(( 2 * upkeep_rows )) back-dated rows in DEFAULT over four windows, a writer every 5 ms and a reader"
psql_b >/dev/null <<SQL
SET TimeZone = 'UTC';
CREATE TABLE dr_ph (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
CREATE TABLE dr_ph_default PARTITION OF dr_ph DEFAULT;
CREATE TABLE dr_pm (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
SELECT partman.create_parent('public.dr_pm', 'at', 'native', 'daily', p_premake := 1);
UPDATE partman.part_config SET automatic_maintenance = 'off' WHERE parent_table = 'public.dr_pm';
-- Two to five days back: past pg_partman's premade window of yesterday.
INSERT INTO dr_ph (at, body) SELECT date_trunc('day', now()) - ((i % 4) + 2) * interval '1 day' + (i % 86400) * interval '1 second', 'back'
  FROM generate_series(1, $(( 2 * upkeep_rows ))) i;
INSERT INTO dr_pm (at, body) SELECT at, body FROM dr_ph;
VACUUM ANALYZE dr_ph, dr_pm;
SQL
up_before_ph=$(psql_b -c "SELECT count(*) FROM dr_ph")
up_before_pm=$(psql_b -c "SELECT count(*) FROM dr_pm")
# PostgreSQL's floor under the drain's writer wait: any ATTACH past a DEFAULT
# reads all of DEFAULT to check it, under a lock the writer waits for (an
# empty window far ahead, rolled back; the least of three).
up_floor=$(psql_b <<'SQL'
CREATE TEMP TABLE dr_floor_ms (ms float8);
CREATE TABLE dr_floor (LIKE dr_ph INCLUDING ALL);
DO $$
DECLARE t0 timestamptz;
BEGIN
  FOR i IN 1..3 LOOP
    BEGIN
      t0 := clock_timestamp();
      ALTER TABLE dr_ph ATTACH PARTITION dr_floor FOR VALUES FROM ('2100-01-01') TO ('2100-01-02');
      RAISE EXCEPTION USING MESSAGE = (extract(epoch FROM clock_timestamp() - t0) * 1000)::text;
    EXCEPTION WHEN raise_exception THEN
      INSERT INTO dr_floor_ms VALUES (SQLERRM::float8);
    END;
  END LOOP;
END $$;
DROP TABLE dr_floor;
SELECT round(min(ms)::numeric, 1) FROM dr_floor_ms;
SQL
)
upkeep_writer dr_ph; upkeep_reader dr_ph
sleep 1
t0=$(date +%s%N)
psql_b -c "SELECT partheal_manage('dr_ph', interval '1 day', premake => 6)" >/dev/null
for i in $(seq 1200); do
  [ "$(psql_b -c "SELECT count(*) FROM ONLY dr_ph_default WHERE body = 'back'")" = 0 ] && break
  sleep 0.1
done
up_took[dr_ph]=$(( ($(date +%s%N) - t0) / 1000000 ))
sleep 1
upkeep_reader_stop dr_ph; upkeep_stop dr_ph
upkeep_writer dr_pm; upkeep_reader dr_pm
sleep 1
t0=$(date +%s%N)
psql_b -c "CALL partman.partition_data_proc('public.dr_pm', p_batch := 100)" >/dev/null || true
up_took[dr_pm]=$(( ($(date +%s%N) - t0) / 1000000 ))
sleep 1
upkeep_reader_stop dr_pm; upkeep_stop dr_pm
up_default_ph=$(psql_b -c "SELECT count(*) FROM ONLY dr_ph_default WHERE body = 'back'")
up_default_pm=$(psql_b -c "SELECT count(*) FROM ONLY dr_pm_default WHERE body = 'back'")
echo "partheal: drained in ${up_took[dr_ph]} ms (${up_default_ph} left), writer ${up_writes[dr_ph]} inserts," \
     "${up_errors[dr_ph]} errors, longest ${up_worst[dr_ph]} ms; reader's lowest ${up_low[dr_ph]} of ${up_before_ph}"
echo "pg_partman: partition_data_proc ${up_took[dr_pm]} ms (${up_default_pm} left), writer ${up_writes[dr_pm]} inserts," \
     "${up_errors[dr_pm]} errors, longest ${up_worst[dr_pm]} ms; reader's lowest ${up_low[dr_pm]} of ${up_before_pm}"

# upkeep_results: the rows of run.sh's results table.
upkeep_results() {
  local t label
  for t in ret_ph ret_phd; do
    if [ "$t" = ret_ph ]; then label="retention CONCURRENTLY, 30 windows"; else label="retention with a DEFAULT, 30 windows"; fi
    printf '%-58s %14s %14s %8s\n' "$label: longest insert, ms" "${up_worst[$t]}" "${up_worst[ret_pm]}" \
      "$(awk "BEGIN{printf \"%.3f\", ${up_worst[$t]}/${up_worst[ret_pm]}}")"
    printf '%-58s %14s %14s %8s\n' "  writer's failed inserts / inserts" "${up_errors[$t]} / ${up_writes[$t]}" \
      "${up_errors[ret_pm]} / ${up_writes[ret_pm]}" "-"
    printf '%-58s %14s %14s %8s\n' "  longest hold of the parent, ms (pg_partman: its call)" "${up_hold[$t]}" "${up_hold[ret_pm]}" "-"
    printf '%-58s %14s %14s %8s\n' "  all 30 gone after, ms" "${up_took[$t]}" "${up_took[ret_pm]}" "-"
  done
  printf '%-58s %14s %14s %8s\n' "drain, $(( 2 * upkeep_rows )) rows: writer's longest insert, ms" "${up_worst[dr_ph]}" "${up_worst[dr_pm]}" \
    "$(awk "BEGIN{printf \"%.3f\", ${up_worst[dr_ph]}/${up_worst[dr_pm]}}")"
  printf '%-58s %14s %14s %8s\n' "  PostgreSQL's floor: one ATTACH's read of DEFAULT, ms" "${up_floor}" "-" "-"
  printf '%-58s %14s %14s %8s\n' "  writer's failed inserts / inserts" "${up_errors[dr_ph]} / ${up_writes[dr_ph]}" \
    "${up_errors[dr_pm]} / ${up_writes[dr_pm]}" "-"
  printf '%-58s %14s %14s %8s\n' "  reader's lowest count / rows before" "${up_low[dr_ph]} / ${up_before_ph}" \
    "${up_low[dr_pm]} / ${up_before_pm}" "-"
  printf '%-58s %14s %14s %8s\n' "  drained after, ms (rows left in DEFAULT)" "${up_took[dr_ph]} (${up_default_ph})" \
    "${up_took[dr_pm]} (${up_default_pm})" "-"
}
