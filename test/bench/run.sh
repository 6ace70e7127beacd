#!/usr/bin/env bash
# make bench: partheal_append against plain PostgreSQL, measured side by side
# in one run on one throwaway cluster, printed as a table of ratios.
#   BENCH_SECONDS  length of each pgbench round (default 10)
#   BENCH_ROUNDS   alternating rounds per contender (default 5)
source "$(dirname "$0")/../lib.sh"

bench_started=$SECONDS
seconds=${BENCH_SECONDS:-10}
rounds=${BENCH_ROUNDS:-5}
install_packages postgresql-15-partman valgrind
build_and_install

work=$(make_workdir)
# pg_partman's background worker runs its maintenance on a timer, as the
# create-ahead comparison asks.
start_cluster "$work" <<CONF
synchronous_commit = off
shared_preload_libraries = 'partheal,pg_partman_bgw'
pg_partman_bgw.interval = 1
pg_partman_bgw.dbname = 'postgres'
pg_partman_bgw.role = 'postgres'
partheal.max_tables = 2000
CONF
psql_b() { psql_c -q -A -t "$@"; }
xmax() { psql_b -c 'SELECT pg_snapshot_xmax(pg_current_snapshot())'; }

psql_b <<'SQL'
CREATE EXTENSION partheal;
-- Same table shape for both contenders; partitions exist for every id the
-- throughput rounds draw, so this measures the fast path.
CREATE TABLE plain_t (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE heal_t  (id bigserial, body text) PARTITION BY RANGE (id);
SELECT partheal_manage('heal_t', 10000000);
SELECT partheal_append('heal_t', '{"body": "warm"}');
CREATE TABLE plain_t_p0 PARTITION OF plain_t FOR VALUES FROM (0) TO (10000000);
CREATE TABLE tx_t (id bigserial, body text) PARTITION BY RANGE (id);
SELECT partheal_manage('tx_t', 1000);
SQL

say "XIDs: 1000 autocommit single-row appends into an existing partition"
echo "SELECT partheal_append('heal_t', '{\"body\": \"x\"}');" > "$work/append.sql"
echo "INSERT INTO plain_t (body) VALUES ('x') RETURNING id;" > "$work/insert.sql"
chown postgres "$work"/*.sql
before=$(xmax); pgbench_c -n -c 1 -t 1000 -f "$work/append.sql" >/dev/null; after=$(xmax)
xid_append=$(( after - before ))
before=$(xmax); pgbench_c -n -c 1 -t 1000 -f "$work/insert.sql" >/dev/null; after=$(xmax)
xid_insert=$(( after - before ))

say "subtransaction XIDs: 10,000 appends in one transaction, partition size 1000"
{ echo "BEGIN;"; for i in $(seq 10000); do echo "SELECT partheal_append('tx_t', '{\"body\": \"x\"}');"; done; echo "COMMIT;"; } > "$work/tx.sql"
chown postgres "$work/tx.sql"
log_from=$(wc -l < "$work/server.log")
before=$(xmax); psql_b -f "$work/tx.sql" >/dev/null; after=$(xmax)
tail -n +"$((log_from + 1))" "$work/server.log" > "$work/tx.log"
heals=$(grep -c 'PHL01 heal: no partition of "public.tx_t"' "$work/tx.log" || true)
# xmax counts every XID in the cluster: the top-level one, and the worker's
# own DDL transactions (one per partition it creates meanwhile: not the
# premake partitions partheal_manage made); the rest are the appends'
# subtransactions.
created=$(grep -c 'PHL02 created partition "public.tx_t_' "$work/tx.log" || true)
subxids=$(( after - before - 1 - created ))

say "throughput: pgbench, 2 clients, synchronous_commit=off, ${rounds} alternating rounds of ${seconds}s"
tps() { pgbench_c -n -c 2 -j 2 -T "$seconds" -f "$1" | sed -n 's/^tps = \([0-9]*\).*/\1/p'; }
append_runs=(); insert_runs=()
for r in $(seq "$rounds"); do
  insert_runs+=("$(tps "$work/insert.sql")")
  append_runs+=("$(tps "$work/append.sql")")
  echo "round $r: INSERT ${insert_runs[-1]} tps, partheal_append ${append_runs[-1]} tps," \
       "ratio $(awk "BEGIN{printf \"%.3f\", ${append_runs[-1]}/${insert_runs[-1]}}")"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ins=$(median "${insert_runs[@]}"); app=$(median "${append_runs[@]}")

say "create-ahead: a single writer across 20 boundaries, partition size 10,000"
psql_b <<'SQL'
CREATE TABLE one_w (id bigserial, body text) PARTITION BY RANGE (id);
SELECT partheal_manage('one_w', 10000);
CREATE TABLE eight_w (id bigserial, body text) PARTITION BY RANGE (id);
SELECT partheal_manage('eight_w', 10000);
SQL
echo "SELECT partheal_append('one_w', '{\"body\": \"x\"}');" > "$work/one.sql"
echo "SELECT partheal_append('eight_w', '{\"body\": \"x\"}');" > "$work/eight.sql"
chown postgres "$work"/*.sql
# One client, so transaction i of the log drew id i + 1.
as_pg sh -c "cd '$work' && pgbench -h '$work' -p $CLUSTER_PORT -n -c 1 -t 200000 -l --log-prefix=one -f one.sql postgres" >/dev/null
one_heals=$(psql_b -c "SELECT heals FROM partheal_stats WHERE parent = 'one_w'::regclass")
# Latency by where the id falls: the 500 ids either side of a boundary (a
# heal would show there), the 50 after a mark (the worker's ATTACH runs
# then), and the middle fifth of a partition. With 50 ids either side the
# boundary window held 2,000 samples against mid's 40,000, and its p99
# swung from 0.85 to 1.3 of mid between runs on this noisy machine. The
# first append into each new partition is reported on its own (worst case).
p99() { sort -n | awk '{a[NR]=$1} END {i=int(NR*0.99); if (i<1) i=1; print a[i]}'; }
window() { awk -v w="$1" '{id=$2+1; r=id%10000;
  if (w=="boundary" && (r<500 || r>=9500)) print $3;
  if (w=="first" && r==0) print $3;
  if (w=="mark" && r>=8000 && r<8050) print $3;
  if (w=="mid" && r>=4000 && r<6000) print $3}' "$work"/one.*; }
lat_boundary=$(window boundary | p99); lat_mark=$(window mark | p99); lat_mid=$(window mid | p99)
lat_first=$(window first | sort -n | tail -1)

say "create-ahead: eight writers across 20 boundaries, partition size 10,000"
pgbench_c -n -c 8 -j 2 -t 25000 -f "$work/eight.sql" >/dev/null
eight_parts=$(psql_b -c "SELECT count(*) FROM pg_inherits WHERE inhparent = 'eight_w'::regclass")
eight_ddl=$(grep -c 'PHL02 created partition "public.eight_w_' "$work/server.log" || true)
# All eight meet the missing first partition at once; what counts is after it.
eight_heals=$({ grep -o 'PHL01 heal: no partition of "public.eight_w" for id [0-9]*' "$work/server.log" || true; } |
  awk '$NF >= 10000' | wc -l)

say "burst: 50,000 single-row inserts at full speed through 50 boundaries (size 1000), 2 clients"
psql_b >/dev/null <<'SQL'
CREATE TABLE burst_ph (id bigserial, body text) PARTITION BY RANGE (id);
SELECT partheal_manage('burst_ph', 1000);
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
CREATE TABLE burst_pm (id bigserial, body text) PARTITION BY RANGE (id);
SELECT partman.create_parent('public.burst_pm', 'id', 'native', '1000', p_premake := 4);
-- Without a DEFAULT partition, as asked: rows past the premade ones fail.
DROP TABLE burst_pm_default;
-- pgbench stops a client at its first error, so failures are counted here
-- (a sequence, so that the count survives the failed statement).
CREATE SEQUENCE burst_pm_failures;
CREATE FUNCTION burst_pm_insert() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO burst_pm (body) VALUES ('x');
EXCEPTION WHEN check_violation THEN
  PERFORM nextval('burst_pm_failures');
END $$;
SQL
echo "SELECT partheal_append('burst_ph', '{\"body\": \"x\"}');" > "$work/burst_ph.sql"
echo "SELECT burst_pm_insert();" > "$work/burst_pm.sql"
chown postgres "$work"/*.sql
burst_ph_done=$(pgbench_c -n -c 2 -j 2 -t 25000 -f "$work/burst_ph.sql" 2>&1 | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
burst_ph_rows=$(psql_b -c "SELECT count(*) FROM burst_ph")
pgbench_c -n -c 2 -j 2 -t 25000 -f "$work/burst_pm.sql" >/dev/null 2>&1 || true
burst_pm_failed=$(psql_b -c "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM burst_pm_failures")
burst_pm_rows=$(psql_b -c "SELECT count(*) FROM burst_pm")

say "plain writers: bursts of 50,000 plain INSERTs (2 clients), recovery, COPY, prepared INSERT"
# Each insert goes through a function that counts a routing failure instead
# of stopping the client, as pgbench would.
psql_b >/dev/null <<'SQL'
CREATE FUNCTION counted_insert(t regclass, failures regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('INSERT INTO %s (body) VALUES (''x'')', t);
EXCEPTION WHEN check_violation THEN
  PERFORM nextval(failures);
END $$;
SQL
# burst NAME SIZE KIND: KIND is nextval (partheal_nextval default), poll
# (the worker's sequence poll alone) or partman (premake 4, no DEFAULT).
burst() {
  local name=$1 size=$2 kind=$3
  if [ "$kind" = partman ]; then
    psql_b >/dev/null <<SQL
CREATE TABLE $name (id bigserial, body text) PARTITION BY RANGE (id);
SELECT partman.create_parent('public.$name', 'id', 'native', '$size', p_premake := 4);
DROP TABLE ${name}_default;
SQL
  else
    psql_b >/dev/null <<SQL
CREATE TABLE $name (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE ${name}_p0 PARTITION OF $name FOR VALUES FROM (0) TO ($size);
SELECT partheal_manage('$name', $size, 80, nextval_default => $([ "$kind" = nextval ] && echo true || echo false));
SQL
  fi
  psql_b -c "CREATE SEQUENCE ${name}_failures" >/dev/null
  echo "SELECT counted_insert('$name', '${name}_failures');" > "$work/$name.sql"
  chown postgres "$work/$name.sql"
  pgbench_c -n -c 2 -j 2 -t 25000 -f "$work/$name.sql" >/dev/null 2>&1 || true
  psql_b -c "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ${name}_failures"
}
for size in 1000 10000; do
  pw_nextval[$size]=$(burst "pw_nextval_$size" $size nextval)
  pw_poll[$size]=$(burst "pw_poll_$size" $size poll)
  pw_partman[$size]=$(burst "pw_partman_$size" $size partman)
done

# Recovery: the position jumps 50 partitions past the last one, as after a
# burst that outran creation; how long until a plain INSERT lands again.
psql_b >/dev/null <<'SQL'
CREATE TABLE recover (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE recover_p0 PARTITION OF recover FOR VALUES FROM (0) TO (1000);
SELECT partheal_manage('recover', 1000);
INSERT INTO recover (body) VALUES ('x');
SQL
sleep 2
psql_b -c "SELECT setval('recover_id_seq', 50500)" >/dev/null
t0=$(date +%s.%N)
until psql_b -c "INSERT INTO recover (body) VALUES ('x')" >/dev/null 2>&1; do sleep 0.01; done
recovery_ms=$(awk "BEGIN{printf \"%.0f\", ($(date +%s.%N) - $t0) * 1000}")

# COPY of 1,000,000 rows at size 10,000: after partheal_reserve, against
# the same COPY into partitions made beforehand.
psql_b >/dev/null <<'SQL'
CREATE TABLE copy_ph (id bigserial, body text) PARTITION BY RANGE (id);
SELECT partheal_manage('copy_ph', 10000);
CREATE TABLE copy_pre (id bigserial, body text) PARTITION BY RANGE (id);
SELECT format('CREATE TABLE copy_pre_p%s PARTITION OF copy_pre FOR VALUES FROM (%s) TO (%s)',
              n * 10000, n * 10000, (n + 1) * 10000)
  FROM generate_series(0, 100) n \gexec
SQL
ms() { awk "BEGIN{printf \"%.0f\", ($2 - $1) * 1000}"; }
t0=$(date +%s.%N)
reserved=$(psql_b -c "SELECT partheal_reserve('copy_ph', 1000000)")
t1=$(date +%s.%N)
psql_b -c "COPY copy_ph (body) FROM PROGRAM 'seq 1 1000000'" >/dev/null || true
t2=$(date +%s.%N)
psql_b -c "COPY copy_pre (body) FROM PROGRAM 'seq 1 1000000'" >/dev/null
t3=$(date +%s.%N)
reserve_ms=$(ms "$t0" "$t1"); copy_ph_ms=$(ms "$t1" "$t2"); copy_pre_ms=$(ms "$t2" "$t3")
copy_rows=$(psql_b -c "SELECT count(*) FROM copy_ph")

# Prepared single-row INSERT: partheal_nextval as the default against plain
# nextval, same table shape, alternating rounds.
psql_b >/dev/null <<'SQL'
CREATE TABLE prep_nv (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE prep_nv_p0 PARTITION OF prep_nv FOR VALUES FROM (0) TO (1000000000);
CREATE TABLE prep_ph (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE prep_ph_p0 PARTITION OF prep_ph FOR VALUES FROM (0) TO (1000000000);
SELECT partheal_manage('prep_ph', 1000000000, 80, nextval_default => true);
SQL
echo "INSERT INTO prep_nv (body) VALUES ('x');" > "$work/prep_nv.sql"
echo "INSERT INTO prep_ph (body) VALUES ('x');" > "$work/prep_ph.sql"
chown postgres "$work"/prep_*.sql
tps_prepared() { pgbench_c -n -M prepared -c 2 -j 2 -T "$seconds" -f "$1" | sed -n 's/^tps = \([0-9]*\).*/\1/p'; }
nv_runs=(); ph_runs=()
for r in $(seq "$rounds"); do
  nv_runs+=("$(tps_prepared "$work/prep_nv.sql")")
  ph_runs+=("$(tps_prepared "$work/prep_ph.sql")")
  echo "round $r: nextval ${nv_runs[-1]} tps, partheal_nextval ${ph_runs[-1]} tps"
done
prep_nv=$(median "${nv_runs[@]}"); prep_ph=$(median "${ph_runs[@]}")

say "the insert gate: plain INSERTs into a managed table against an identical table partheal does not manage"
# The same shape for both, one partition that holds every id the rounds
# draw: what the gate costs a row whose partition exists. Then a 20,000-row
# INSERT ... SELECT (both tables emptied between rounds), and the latency of
# a statement that heals: a plain INSERT against partheal_append, each
# drawing an id 10 past the last (INCREMENT 10, partitions of 10 ids,
# create-ahead off), so that every statement needs a new partition.
psql_b >/dev/null <<'SQL'
CREATE TABLE gate_m (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE gate_m_p0 PARTITION OF gate_m FOR VALUES FROM (0) TO (1000000000);
SELECT partheal_manage('gate_m', 1000000000, NULL, premake => 0);
CREATE TABLE gate_u (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE gate_u_p0 PARTITION OF gate_u FOR VALUES FROM (0) TO (1000000000);
CREATE TABLE heal_ins (id bigserial, body text) PARTITION BY RANGE (id);
ALTER SEQUENCE heal_ins_id_seq INCREMENT 10;
SELECT partheal_manage('heal_ins', 10, NULL, premake => 0);
CREATE TABLE heal_app (id bigserial, body text) PARTITION BY RANGE (id);
ALTER SEQUENCE heal_app_id_seq INCREMENT 10;
SELECT partheal_manage('heal_app', 10, NULL, premake => 0);
SQL
echo "INSERT INTO gate_m (body) VALUES ('x') RETURNING id;" > "$work/gate_m.sql"
echo "INSERT INTO gate_u (body) VALUES ('x') RETURNING id;" > "$work/gate_u.sql"
echo "INSERT INTO gate_m (body) SELECT 'x' FROM generate_series(1, 20000);" > "$work/gate_m20k.sql"
echo "INSERT INTO gate_u (body) SELECT 'x' FROM generate_series(1, 20000);" > "$work/gate_u20k.sql"
echo "INSERT INTO heal_ins (body) VALUES ('x');" > "$work/heal_ins.sql"
echo "SELECT partheal_append('heal_app', '{\"body\": \"x\"}');" > "$work/heal_app.sql"
chown postgres "$work"/gate_*.sql "$work"/heal_*.sql
gm_runs=(); gu_runs=(); gm20_runs=(); gu20_runs=()
# One 20,000-row round of a contender: both tables emptied and a checkpoint
# first, so that neither writes while the other's dirty pages are flushed.
rows20k() {
  psql_b -c "TRUNCATE gate_m, gate_u" -c "CHECKPOINT" >/dev/null
  pgbench_c -n -M prepared -c 1 -t 20 -f "$1" | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
for r in $(seq "$rounds"); do
  # Which contender goes first alternates from round to round.
  if [ $((r % 2)) = 1 ]; then
    gu_runs+=("$(tps_prepared "$work/gate_u.sql")"); gm_runs+=("$(tps_prepared "$work/gate_m.sql")")
    gu20_runs+=("$(rows20k "$work/gate_u20k.sql")"); gm20_runs+=("$(rows20k "$work/gate_m20k.sql")")
  else
    gm_runs+=("$(tps_prepared "$work/gate_m.sql")"); gu_runs+=("$(tps_prepared "$work/gate_u.sql")")
    gm20_runs+=("$(rows20k "$work/gate_m20k.sql")"); gu20_runs+=("$(rows20k "$work/gate_u20k.sql")")
  fi
  psql_b -c "TRUNCATE gate_m, gate_u" >/dev/null
  echo "round $r: single row $(( ${gm_runs[-1]} )) / $(( ${gu_runs[-1]} )) tps," \
       "20,000 rows ${gm20_runs[-1]} / ${gu20_runs[-1]} statements a second (managed / not)"
done
gate_m=$(median "${gm_runs[@]}"); gate_u=$(median "${gu_runs[@]}")
gate_m20=$(median "${gm20_runs[@]}"); gate_u20=$(median "${gu20_runs[@]}")
heal_latency() { pgbench_c -n -M prepared -c 1 -t 200 -f "$1" | sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p'; }
heal_ins_ms=$(heal_latency "$work/heal_ins.sql"); heal_app_ms=$(heal_latency "$work/heal_app.sql")
heal_ins_made=$(psql_b -c "SELECT count(*) FROM pg_inherits WHERE inhparent = 'heal_ins'::regclass")
heal_app_made=$(psql_b -c "SELECT count(*) FROM pg_inherits WHERE inhparent = 'heal_app'::regclass")
echo "healing statements: plain INSERT $heal_ins_ms ms ($heal_ins_made partitions), partheal_append $heal_app_ms ms ($heal_app_made partitions)"

say "time keys: single-row partheal_append against plain INSERT, prepared, daily windows that exist"
# The same shape for both: now()'s UTC day and the 4 after it. partheal's
# are made by partheal_manage (premake 4); plain PostgreSQL's by hand.
psql_b >/dev/null <<'SQL'
CREATE TABLE time_ph (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
SELECT partheal_manage('time_ph', interval '1 day');
SELECT partheal_append('time_ph', '{"body": "warm"}');
CREATE TABLE time_plain (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
SELECT format('CREATE TABLE time_plain_p%s PARTITION OF time_plain FOR VALUES FROM (%L) TO (%L)',
              to_char(d, 'YYYYMMDD'), d AT TIME ZONE 'UTC', (d + interval '1 day') AT TIME ZONE 'UTC')
  FROM generate_series(date_trunc('day', now() AT TIME ZONE 'UTC'),
                       date_trunc('day', now() AT TIME ZONE 'UTC') + interval '4 days', interval '1 day') d \gexec
SQL
time_parts=$(psql_b -c "SELECT (SELECT count(*) FROM pg_inherits WHERE inhparent = 'time_ph'::regclass) || ' / ' ||
                               (SELECT count(*) FROM pg_inherits WHERE inhparent = 'time_plain'::regclass)")
echo "SELECT partheal_append('time_ph', '{\"body\": \"x\"}');" > "$work/time_append.sql"
echo "INSERT INTO time_plain (body) VALUES ('x');" > "$work/time_insert.sql"
chown postgres "$work"/time_*.sql
tins_runs=(); tapp_runs=()
for r in $(seq "$rounds"); do
  tins_runs+=("$(tps_prepared "$work/time_insert.sql")")
  tapp_runs+=("$(tps_prepared "$work/time_append.sql")")
  echo "round $r: INSERT ${tins_runs[-1]} tps, partheal_append ${tapp_runs[-1]} tps," \
       "ratio $(awk "BEGIN{printf \"%.3f\", ${tapp_runs[-1]}/${tins_runs[-1]}}")"
done
time_ins=$(median "${tins_runs[@]}"); time_app=$(median "${tapp_runs[@]}")

tw_seconds=${BENCH_WINDOW_SECONDS:-30}
tw_clients=${BENCH_WINDOW_CLIENTS:-2}
tw_idle=5
say "time keys: $tw_clients plain INSERT writers of DEFAULT now() through 1-second windows, premake 2"
# partheal (no DEFAULT: a row without a window fails) against pg_partman 4.7
# (its DEFAULT, made by create_parent, takes such rows), one after the
# other. pg_partman accepts intervals down to 1 second; its background
# worker runs maintenance every second (pg_partman_bgw.interval = 1, its
# shortest). Each insert goes through a function that counts a failure
# instead of stopping the client: 23514 (no partition for the row) and any
# other error apart. Two cases for each contender:
#   tw: registered right before the writers start, who write ${tw_seconds} s;
#   tl: registered, ${tw_idle} s with no rows (a set that its application
#       fills later), then writers for 10 s. pg_partman makes no child for a
#       set that has no rows (its #332).
seq_count() { psql_b -c "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM $1"; }
declare -A tw_fail tw_other tw_rows tw_default tw_aborted tw_crossed tw_done tw_maint
# tw_case CASE WHO IDLE SECONDS: table CASE_WHO, results under [CASE_WHO].
tw_case() {
  local t=$1_$2 who=$2 idle=$3 secs=$4 log_from t_from out
  psql_b >/dev/null <<SQL
CREATE TABLE $t (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
CREATE SEQUENCE ${t}_no_partition; CREATE SEQUENCE ${t}_other;
CREATE FUNCTION ${t}_insert() RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
  INSERT INTO $t (body) VALUES ('x');
EXCEPTION
  WHEN check_violation THEN PERFORM nextval('${t}_no_partition');
  WHEN OTHERS THEN PERFORM nextval('${t}_other');
END \$\$;
SQL
  echo "SELECT ${t}_insert();" > "$work/$t.sql"
  chown postgres "$work/$t.sql"
  log_from=$(wc -l < "$work/server.log")
  if [ "$who" = ph ]; then psql_b -c "SELECT partheal_manage('$t', interval '1 second', premake => 2)"
  else psql_b -c "SELECT partman.create_parent('public.$t', 'at', 'native', '1 second', p_premake := 2)"
  fi >/dev/null
  sleep "$idle"
  t_from=$(psql_b -c "SELECT now()")
  out=$(pgbench_c -n -c "$tw_clients" -j "$tw_clients" -T "$secs" -f "$work/$t.sql" 2>&1 || true)
  tw_aborted[$t]=$(grep -c 'aborted' <<<"$out" || true)
  tw_fail[$t]=$(seq_count "${t}_no_partition")
  tw_other[$t]=$(seq_count "${t}_other")
  tw_rows[$t]=$(psql_b -c "SELECT count(*) FROM $t")
  tw_default[$t]=$(psql_b -c "SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                               WHERE i.inhparent = '$t'::regclass AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'")
  if [ "${tw_default[$t]}" = 1 ]; then tw_default[$t]=$(psql_b -c "SELECT count(*) FROM ${t}_default"); else tw_default[$t]=-; fi
  # The windows the writers went through: the seconds from their start on.
  tw_crossed[$t]=$(psql_b -c "SELECT count(DISTINCT date_trunc('second', at)) FROM $t WHERE at >= '$t_from'")
  tw_done[$t]=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
  # Neither goes on making 1-second windows for the rest of the run.
  if [ "$who" = ph ]; then psql_b -c "SELECT partheal_unmanage('$t')"
  else psql_b -c "UPDATE partman.part_config SET automatic_maintenance = 'off' WHERE parent_table = 'public.$t'"
  fi >/dev/null
  # What went wrong on the server meanwhile (a caught error is not logged);
  # for pg_partman, the maintenance runs that failed because a new child's
  # range had rows in DEFAULT (pg_partman #398 and others).
  tail -n +"$((log_from + 1))" "$work/server.log" > "$work/$t.log"
  tw_maint[$t]=$(grep -c 'ERROR: .*default partition .* would be violated' "$work/$t.log" || true)
  echo "$t: ${tw_done[$t]} inserts through ${tw_crossed[$t]} windows, ${tw_fail[$t]} without a partition," \
       "${tw_other[$t]} other errors, ${tw_aborted[$t]} clients aborted, ${tw_default[$t]} rows in DEFAULT"
  grep -E 'ERROR|WARNING|FATAL' "$work/$t.log" | sed 's/^[^]]*\] //' | sort | uniq -c | sort -rn | head -5 || true
}
for who in ph pm; do tw_case tw "$who" 0 "$tw_seconds"; done
for who in ph pm; do tw_case tl "$who" "$tw_idle" 10; done

# The worker's upkeep, retention and the drain of DEFAULT, against
# pg_partman's (test/bench/upkeep.sh).
source "$(dirname "$0")/upkeep.sh"

say "instructions: 2000 single-row appends vs 2000 INSERT ... RETURNING id, callgrind, single-user backend"
# Instruction counts do not move with the machine's load, unlike tps.
cg="$work/callgrind"
mkdir -p "$cg" && chown postgres "$cg"
as_pg initdb -D "$cg/data" -A trust >/dev/null
echo "shared_preload_libraries = 'partheal'" >> "$cg/data/postgresql.conf"
single() { as_pg postgres --single -D "$cg/data" postgres; }
single >/dev/null <<'SQL'
CREATE EXTENSION partheal;
CREATE TABLE plain_t (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE plain_t_p0 PARTITION OF plain_t FOR VALUES FROM (0) TO (100000000);
CREATE TABLE heal_t (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE heal_t_p0 PARTITION OF heal_t FOR VALUES FROM (0) TO (100000000);
SELECT partheal_manage('heal_t', 100000000);
CREATE TABLE nv_t (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE nv_t_p0 PARTITION OF nv_t FOR VALUES FROM (0) TO (100000000);
SELECT partheal_manage('nv_t', 100000000, 80, true);
CREATE TABLE time_ph (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
SELECT partheal_manage('time_ph', interval '1 day');
CREATE TABLE gate_m (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE gate_m_p0 PARTITION OF gate_m FOR VALUES FROM (0) TO (100000000);
SELECT partheal_manage('gate_m', 100000000, NULL, premake => 0);
CREATE TABLE time_plain (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
DO $$ DECLARE d timestamp; BEGIN FOR d IN SELECT generate_series(date_trunc('day', now() AT TIME ZONE 'UTC'), date_trunc('day', now() AT TIME ZONE 'UTC') + interval '4 days', interval '1 day') LOOP EXECUTE format('CREATE TABLE time_plain_p%s PARTITION OF time_plain FOR VALUES FROM (%L) TO (%L)', to_char(d, 'YYYYMMDD'), d AT TIME ZONE 'UTC', (d + interval '1 day') AT TIME ZONE 'UTC'); END LOOP; END $$;
SQL
instructions() {
  as_pg valgrind --tool=callgrind --callgrind-out-file=/dev/null postgres --single -D "$cg/data" postgres \
    < "$1" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
# The base run makes one call, so the first call's one-time work (loading
# the registration, preparing plans) is not counted per statement.
for n in 1 2001; do
  for i in $(seq "$n"); do echo "SELECT partheal_append('heal_t', '{\"body\": \"x\"}');"; done > "$cg/app$n.sql"
  for i in $(seq "$n"); do echo "INSERT INTO plain_t (body) VALUES ('x') RETURNING id;"; done > "$cg/ins$n.sql"
  # Prepared, as drivers run them: the default's cost without the parser's.
  { echo "PREPARE p AS INSERT INTO plain_t (body) VALUES ('x');"
    for i in $(seq "$n"); do echo "EXECUTE p;"; done; } > "$cg/pins$n.sql"
  { echo "PREPARE p AS INSERT INTO nv_t (body) VALUES ('x');"
    for i in $(seq "$n"); do echo "EXECUTE p;"; done; } > "$cg/nv$n.sql"
  # Time key, both prepared, as the tps rounds run them.
  { echo "PREPARE p AS SELECT partheal_append('time_ph', '{\"body\": \"x\"}');"
    for i in $(seq "$n"); do echo "EXECUTE p;"; done; } > "$cg/tapp$n.sql"
  { echo "PREPARE p AS INSERT INTO time_plain (body) VALUES ('x');"
    for i in $(seq "$n"); do echo "EXECUTE p;"; done; } > "$cg/tins$n.sql"
  # The insert gate: the same prepared INSERT ... RETURNING id into a
  # managed table whose partition exists, against plain_t.
  { echo "PREPARE p AS INSERT INTO gate_m (body) VALUES ('x') RETURNING id;"
    for i in $(seq "$n"); do echo "EXECUTE p;"; done; } > "$cg/gm$n.sql"
  { echo "PREPARE p AS INSERT INTO plain_t (body) VALUES ('x') RETURNING id;"
    for i in $(seq "$n"); do echo "EXECUTE p;"; done; } > "$cg/gu$n.sql"
done
# And one 20,000-row INSERT ... SELECT into each (a whole run: the
# statement's one-time costs are part of it).
echo "INSERT INTO gate_m (body) SELECT 'x' FROM generate_series(1, 20000);" > "$cg/gm20k.sql"
echo "INSERT INTO plain_t (body) SELECT 'x' FROM generate_series(1, 20000);" > "$cg/gu20k.sql"
chown postgres "$cg"/*.sql
per_statement() { local base; base=$(instructions "$cg/${1}1.sql"); echo $(( ($(instructions "$cg/${1}2001.sql") - base) / 2000 )); }
cg_app=$(per_statement app)
cg_ins=$(per_statement ins)
cg_pins=$(per_statement pins)
cg_nv=$(per_statement nv)
cg_tapp=$(per_statement tapp)
cg_tins=$(per_statement tins)
cg_gm=$(per_statement gm)
cg_gu=$(per_statement gu)
cg_gm20=$(instructions "$cg/gm20k.sql")
cg_gu20=$(instructions "$cg/gu20k.sql")

say "idle tables: transactions and worker CPU per poll, 10, 100 and 1,000 managed tables, naptime 100ms"
# Each count in a database of its own, where no session is connected: its
# xact_commit is the worker's alone. Every table has the partitions its
# position needs, so every poll finds nothing to do.
psql_b -c "ALTER SYSTEM SET partheal.naptime = '100ms'" -c 'SELECT pg_reload_conf()' >/dev/null
idle_seconds=10
declare -A idle_xacts idle_cpu
for n in 10 100 1000; do
  psql_b -c "CREATE DATABASE idle_$n" >/dev/null
  as_pg psql -X -q -h "$CLUSTER_DIR" -p "$CLUSTER_PORT" -d "idle_$n" -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE EXTENSION partheal;
DO \$\$
BEGIN
  FOR i IN 1 .. $n LOOP
    EXECUTE format('CREATE TABLE t%s (id bigserial, v int) PARTITION BY RANGE (id)', i);
    EXECUTE format('CREATE TABLE t%s_p0 PARTITION OF t%s FOR VALUES FROM (0) TO (1000)', i, i);
    PERFORM partheal_manage(format('t%s', i)::regclass, 1000);
    -- Each registration makes its premake (4) partitions: one transaction
    -- for all 1,000 tables would run out of max_locks_per_transaction.
    COMMIT;
  END LOOP;
END \$\$;
SQL
  sleep 3  # the worker starts and finds every table idle
  pid=$(psql_b -c "SELECT pid FROM partheal_workers() WHERE datname = 'idle_$n'")
  commits() { psql_b -c "SELECT xact_commit FROM pg_stat_database WHERE datname = 'idle_$n'"; }
  ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
  c0=$(commits); t0=$(ticks); sleep "$idle_seconds"; c1=$(commits); t1=$(ticks)
  polls=$(( idle_seconds * 10 ))
  idle_xacts[$n]=$(awk "BEGIN{printf \"%.2f\", ($c1 - $c0) / $polls}")
  # /proc counts CPU in clock ticks (USER_HZ, 100 a second).
  idle_cpu[$n]=$(awk "BEGIN{printf \"%.2f\", ($t1 - $t0) * 1000 / $(getconf CLK_TCK) / $polls}")
  echo "$n tables: ${idle_xacts[$n]} transactions and ${idle_cpu[$n]} ms of CPU per poll"
  psql_b -c "DROP DATABASE idle_$n WITH (FORCE)" >/dev/null
done
psql_b -c 'ALTER SYSTEM RESET partheal.naptime' -c 'SELECT pg_reload_conf()' >/dev/null

say "PostgreSQL 18 (the assertion-enabled build): single-row append and INSERT, simple and prepared"
# The same single-row figures on the newer major, on a cluster of its own,
# so that a regression there shows. Its server checks assertions, which cost
# both contenders alike: read the ratios, not the tps. BENCH_PG18=0 skips.
pg18=()
if [ "${BENCH_PG18:-1}" != 0 ]; then
  pg18_file="$work/pg18.results"
  (
    PG=18
    use_major
    install_into "$PGBIN/pg_config" >/dev/null
    mkdir -p "$work/pg18" && chown postgres "$work/pg18"
    start_cluster "$work/pg18" <<CONF
synchronous_commit = off
partheal.max_tables = 2000
CONF
    psql_c -q -A -t >/dev/null <<'SQL'
CREATE EXTENSION partheal;
CREATE TABLE plain_t (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE heal_t  (id bigserial, body text) PARTITION BY RANGE (id);
SELECT partheal_manage('heal_t', 10000000);
SELECT partheal_append('heal_t', '{"body": "warm"}');
CREATE TABLE plain_t_p0 PARTITION OF plain_t FOR VALUES FROM (0) TO (10000000);
SQL
    runs() {  # runs MODE: median tps of INSERT and of partheal_append, alternating
      local mode=$1 a=() i=() r
      for r in $(seq "$rounds"); do
        i+=("$(pgbench_c -n -M "$mode" -c 2 -j 2 -T "$seconds" -f "$work/insert.sql" | sed -n 's/^tps = \([0-9]*\).*/\1/p')")
        a+=("$(pgbench_c -n -M "$mode" -c 2 -j 2 -T "$seconds" -f "$work/append.sql" | sed -n 's/^tps = \([0-9]*\).*/\1/p')")
        echo "PostgreSQL 18, $mode, round $r: INSERT ${i[-1]} tps, partheal_append ${a[-1]} tps" >&2
      done
      echo "$(median "${a[@]}") $(median "${i[@]}")"
    }
    echo "$("$PGBIN/postgres" --version | awk '{print $NF}') $(runs simple) $(runs prepared)" > "$pg18_file"
  ) || echo "the PostgreSQL 18 figures failed (see above)"
  [ -s "$pg18_file" ] && read -r -a pg18 < "$pg18_file"
fi

say "results"
printf '%-58s %14s %14s %8s\n' "measure" "partheal" "plain PG" "ratio"
printf '%-58s %14s %14s %8s\n' "XIDs per autocommit single-row append (1000 appends)" \
  "$(awk "BEGIN{printf \"%.3f\", $xid_append/1000}")" "$(awk "BEGIN{printf \"%.3f\", $xid_insert/1000}")" "-"
printf '%-58s %14s %14s %8s\n' "subtransaction XIDs, 10,000 appends in one tx ($heals heals)" "$subxids" "-" "-"
printf '%-58s %14s %14s %8s\n' "single-row tps, median of $rounds (INSERT ... RETURNING id)" "$app" "$ins" \
  "$(awk "BEGIN{printf \"%.3f\", $app/$ins}")"
printf '%-58s %14s %14s %8s\n' "instructions per single-row statement (callgrind)" "$cg_app" "$cg_ins" \
  "$(awk "BEGIN{printf \"%.3f\", $cg_ins/$cg_app}")"
printf '%-58s %14s %14s %8s\n' "heals, 1 writer, 20 boundaries (premake made the first: 0)" "$one_heals" "-" "-"
printf '%-58s %14s %14s %8s\n' "p99 latency: within 500 ids of a boundary / mid" "$lat_boundary us" "$lat_mid us" \
  "$(awk "BEGIN{printf \"%.3f\", $lat_boundary/$lat_mid}")"
printf '%-58s %14s %14s %8s\n' "worst first append into a new partition" "$lat_first us" "-" "-"
printf '%-58s %14s %14s %8s\n' "p99 latency: the 50 ids after a mark (DDL runs) / mid" "$lat_mark us" "$lat_mid us" \
  "$(awk "BEGIN{printf \"%.3f\", $lat_mark/$lat_mid}")"
printf '%-58s %14s %14s %8s\n' "8 writers, 20 boundaries: partitions / DDL (later heals)" "$eight_parts / $eight_ddl ($eight_heals)" "-" "-"
printf '%-58s %14s %14s %8s\n' "burst, 50,000 inserts: failed (partheal vs pg_partman 4.7)" \
  "$(( 50000 - ${burst_ph_done:-0} ))" "$burst_pm_failed" "-"
printf '%-58s %14s %14s %8s\n' "burst, rows landed" "$burst_ph_rows" "$burst_pm_rows" "-"
for size in 1000 10000; do
  printf '%-58s %14s %14s %8s\n' "cold INSERT burst, size $size, failed: nextval / partman" \
    "${pw_nextval[$size]}" "${pw_partman[$size]}" "-"
  printf '%-58s %14s %14s %8s\n' "cold INSERT burst, size $size, failed: gate, premake 4 / partman" \
    "${pw_poll[$size]}" "${pw_partman[$size]}" "-"
done
printf '%-58s %14s %14s %8s\n' "recovery: a plain INSERT lands again after a burst" "$recovery_ms ms" "-" "-"
printf '%-58s %14s %14s %8s\n' "COPY 1,000,000 rows, size 10,000 (reserve: $reserved parts, $reserve_ms ms)" \
  "$copy_ph_ms ms" "$copy_pre_ms ms" "$(awk "BEGIN{printf \"%.3f\", $copy_ph_ms/$copy_pre_ms}")"
printf '%-58s %14s %14s %8s\n' "COPY rows landed after partheal_reserve" "$copy_rows" "1000000" "-"
for n in 10 100 1000; do
  printf '%-58s %14s %14s %8s\n' "idle, $n tables: transactions / worker CPU ms per poll" \
    "${idle_xacts[$n]} / ${idle_cpu[$n]}" "-" "-"
done
printf '%-58s %14s %14s %8s\n' "prepared INSERT tps: partheal_nextval / nextval default" "$prep_ph" "$prep_nv" \
  "$(awk "BEGIN{printf \"%.3f\", $prep_ph/$prep_nv}")"
printf '%-58s %14s %14s %8s\n' "instructions per prepared INSERT: partheal_nextval / nextval" "$cg_nv" "$cg_pins" \
  "$(awk "BEGIN{printf \"%.3f\", $cg_nv/$cg_pins}")"
printf '%-58s %14s %14s %8s\n' "insert gate: prepared INSERT ... RETURNING id tps (managed / not)" "$gate_m" "$gate_u" \
  "$(awk "BEGIN{printf \"%.3f\", $gate_m/$gate_u}")"
printf '%-58s %14s %14s %8s\n' "insert gate: instructions per prepared INSERT (callgrind)" "$cg_gm" "$cg_gu" \
  "$(awk "BEGIN{printf \"%.3f\", $cg_gu/$cg_gm}")"
printf '%-58s %14s %14s %8s\n' "insert gate: 20,000-row INSERT ... SELECT, statements/s" "$gate_m20" "$gate_u20" \
  "$(awk "BEGIN{printf \"%.3f\", $gate_m20/$gate_u20}")"
printf '%-58s %14s %14s %8s\n' "insert gate: instructions, 20,000-row INSERT ... SELECT" "$cg_gm20" "$cg_gu20" \
  "$(awk "BEGIN{printf \"%.3f\", $cg_gu20/$cg_gm20}")"
printf '%-58s %14s %14s %8s\n' "a statement that heals: plain INSERT / partheal_append" "$heal_ins_ms ms" "$heal_app_ms ms" \
  "$(awk "BEGIN{printf \"%.3f\", $heal_ins_ms/$heal_app_ms}")"
printf '%-58s %14s %14s %8s\n' "time key: single-row tps, prepared (append / INSERT)" "$time_app" "$time_ins" \
  "$(awk "BEGIN{printf \"%.3f\", $time_app/$time_ins}")"
printf '%-58s %14s %14s %8s\n' "time key: instructions per prepared statement (callgrind)" "$cg_tapp" "$cg_tins" \
  "$(awk "BEGIN{printf \"%.3f\", $cg_tins/$cg_tapp}")"
for c in tw tl; do
  if [ $c = tw ]; then label="1 s windows, ${tw_clients} writers, ${tw_seconds} s"; else label="1 s windows, 10 s after ${tw_idle} s idle"; fi
  printf '%-58s %14s %14s %8s\n' "$label: inserts (windows) / partman" \
    "${tw_done[${c}_ph]} (${tw_crossed[${c}_ph]})" "${tw_done[${c}_pm]} (${tw_crossed[${c}_pm]})" "-"
  printf '%-58s %14s %14s %8s\n' "  failed inserts: no partition / other error" \
    "${tw_fail[${c}_ph]} / ${tw_other[${c}_ph]}" "${tw_fail[${c}_pm]} / ${tw_other[${c}_pm]}" "-"
  printf '%-58s %14s %14s %8s\n' "  rows in DEFAULT (partheal has none) / rows landed" \
    "${tw_default[${c}_ph]} / ${tw_rows[${c}_ph]}" "${tw_default[${c}_pm]} / ${tw_rows[${c}_pm]}" "-"
  printf '%-58s %14s %14s %8s\n' "  maintenance runs failed on the DEFAULT's rows" "-" "${tw_maint[${c}_pm]}" "-"
done
printf '%-58s %14s %14s %8s\n' "the worker's upkeep" "partheal" "pg_partman" "ratio"
upkeep_results
if [ ${#pg18[@]} -eq 5 ]; then
  printf '%-58s %14s %14s %8s\n' "PostgreSQL ${pg18[0]} (assertions on): single-row tps, simple" "${pg18[1]}" "${pg18[2]}" \
    "$(awk "BEGIN{printf \"%.3f\", ${pg18[1]}/${pg18[2]}}")"
  printf '%-58s %14s %14s %8s\n' "PostgreSQL ${pg18[0]} (assertions on): single-row tps, prepared" "${pg18[3]}" "${pg18[4]}" \
    "$(awk "BEGIN{printf \"%.3f\", ${pg18[3]}/${pg18[4]}}")"
fi
echo "(make bench took $(( (SECONDS - bench_started) / 60 )) min $(( (SECONDS - bench_started) % 60 )) s)"
