#!/usr/bin/env bash
# make bench: partheal_append against plain PostgreSQL, measured side by side
# in one run on one throwaway cluster, printed as a table of ratios.
#   BENCH_SECONDS  length of each pgbench round (default 10)
#   BENCH_ROUNDS   alternating rounds per contender (default 3)
source "$(dirname "$0")/../lib.sh"

seconds=${BENCH_SECONDS:-10}
rounds=${BENCH_ROUNDS:-3}
install_packages
build_and_install

work=$(make_workdir)
start_cluster "$work" <<< "synchronous_commit = off"
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
before=$(xmax); psql_b -f "$work/tx.sql" >/dev/null; after=$(xmax)
heals=$(grep -c 'PHL01 heal: no partition of "public.tx_t"' "$work/server.log" || true)
# xmax counts every XID in the cluster: the top-level one, and the worker's
# own DDL transactions (one per partition it creates); the rest are the
# appends' subtransactions.
created=$(grep -c 'PHL02 created partition "public.tx_t_' "$work/server.log" || true)
subxids=$(( after - before - 1 - created ))

say "throughput: pgbench, 2 clients, synchronous_commit=off, ${rounds} alternating rounds of ${seconds}s"
tps() { pgbench_c -n -c 2 -j 2 -T "$seconds" -f "$1" | sed -n 's/^tps = \([0-9]*\).*/\1/p'; }
append_runs=(); insert_runs=()
for r in $(seq "$rounds"); do
  insert_runs+=("$(tps "$work/insert.sql")")
  append_runs+=("$(tps "$work/append.sql")")
  echo "round $r: INSERT ${insert_runs[-1]} tps, partheal_append ${append_runs[-1]} tps"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ins=$(median "${insert_runs[@]}"); app=$(median "${append_runs[@]}")

say "results"
printf '%-58s %14s %14s %8s\n' "measure" "partheal" "plain PG" "ratio"
printf '%-58s %14s %14s %8s\n' "XIDs per autocommit single-row append (1000 appends)" \
  "$(awk "BEGIN{printf \"%.3f\", $xid_append/1000}")" "$(awk "BEGIN{printf \"%.3f\", $xid_insert/1000}")" "-"
printf '%-58s %14s %14s %8s\n' "subtransaction XIDs, 10,000 appends in one tx ($heals heals)" "$subxids" "-" "-"
printf '%-58s %14s %14s %8s\n' "single-row tps, median of $rounds (INSERT ... RETURNING id)" "$app" "$ins" \
  "$(awk "BEGIN{printf \"%.3f\", $app/$ins}")"
