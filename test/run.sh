#!/usr/bin/env bash
# make test: sets up the machine, then runs pg_regress, the isolation specs
# and the TAP tests, each against its own throwaway cluster.
source "$(dirname "$0")/lib.sh"

install_packages
timing "packages"
build_and_install
timing "build and install ($PG)"
# On 18, 012_dump_15_to_18.pl dumps a 15 database with
# partheal in it and restores it here.
if [ "$PG" = 18 ]; then
  install_into /usr/lib/postgresql/15/bin/pg_config
  export PARTHEAL_PG15=/usr/lib/postgresql/15
  timing "build and install (15, for the dump test)"
fi
work=$(make_workdir)
cd "$work"
# Soak phases (the race rounds of 005) run their full length on the
# assertion-enabled 18, a third of it on the other majors; each still
# checks that it lost its race.
export PARTHEAL_SOAK=${PARTHEAL_SOAK:-$([ "$PG" = 18 ] && echo full || echo short)}
passed=0
failed=0

# SANITIZE=undefined make test: the library is built with UBSan, whose
# runtime loads with it, and any report counts as a failure. (AddressSanitizer
# needs its runtime preloaded, and Debian's postgres hangs at start under
# that preload; use valgrind for memory errors, see CONTRIBUTING.md.)
if [ -n "${SANITIZE:-}" ]; then
  mkdir -p "$work/sanitizer" && chown postgres "$work/sanitizer"
  export UBSAN_OPTIONS="print_stacktrace=1:log_path=$work/sanitizer/report"
fi

# VALGRIND=1 make test: every postgres of pg_regress and the TAP tests runs
# under valgrind memcheck (test/valgrind/valgrind.sh); the isolation specs are
# skipped, and a TAP file may opt out by checking PARTHEAL_VALGRIND. Each
# process log with an unsuppressed error is one failure.
regress_bin=$PGBIN
tap_path=$PATH
if [ -n "${VALGRIND:-}" ]; then
  source "$PARTHEAL_ROOT/test/valgrind/valgrind.sh"
  valgrind_fetch_suppressions
  valgrind_setup "$work"
  regress_bin=$VALGRIND_BIN
  tap_path="$VALGRIND_BIN:$PATH"
  export TEMP_CONFIG="$work/valgrind/tap.conf"
  valgrind_started=$(date +%s)
fi

count() {  # pg_regress ends on "All N tests passed." or "M of N tests failed." (18: after "# ")
  local log=$1 n m
  if n=$(grep -oE 'All [0-9]+ tests passed' "$log" | grep -oE '[0-9]+'); then
    passed=$((passed + n))
  elif read -r m n < <(grep -oE '[0-9]+ of [0-9]+ tests failed' "$log" | grep -oE '[0-9]+' | xargs); then
    passed=$((passed + n - m)); failed=$((failed + m))
  else
    failed=$((failed + 1))
  fi
}

say "unit: the key space and create-ahead's math, no PostgreSQL"
# Each test/unit/NAME_test.cpp is built with the sources it tests and prints
# "NAME: N passed, M failed".
declare -A unit_sources=(
  [key_space]="src/partitions/key_space.cpp"
  [headroom]="src/ahead/headroom.cpp src/partitions/key_space.cpp"
  [clock]="src/ahead/clock.cpp src/partitions/key_space.cpp"
)
for t in "${!unit_sources[@]}"; do
  srcs=()
  for s in ${unit_sources[$t]}; do srcs+=("$PARTHEAL_ROOT/$s"); done
  unit=
  if g++ -std=c++17 -Wall -Wextra -Werror -I"$PARTHEAL_ROOT/src" \
       "$PARTHEAL_ROOT/test/unit/${t}_test.cpp" "${srcs[@]}" -o "$work/${t}_test"; then
    "$work/${t}_test" | tee "unit_$t.log" || true
    unit=$(sed -n "s/^$t: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p" "unit_$t.log")
  fi
  if [ -n "$unit" ]; then
    passed=$((passed + ${unit% *})); failed=$((failed + ${unit#* }))
  else
    failed=$((failed + 1)); echo "not ok - unit test $t did not build or run"
  fi
done
ls "$PARTHEAL_ROOT"/test/unit/*_test.cpp | grep -v /private_layout_test.cpp | sed 's|.*/\(.*\)_test.cpp|\1|' | while read -r t; do
  [ -n "${unit_sources[$t]:-}" ] || echo "not ok - test/unit/${t}_test.cpp is not built by test/run.sh"
done | grep . && failed=$((failed + 1))

timing "unit"

say "layers: every include in src/ points down"
if bash "$PARTHEAL_ROOT/test/check_layers.sh"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

say "boundary: guard bodies hold PostgreSQL calls only"
if python3 "$PARTHEAL_ROOT/test/check_guards.py"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

say "docs: the version, SQLSTATEs and log codes are the source's"
if PG_INCLUDEDIR_SERVER=$("$PGBIN/pg_config" --includedir-server) python3 "$PARTHEAL_ROOT/test/check_docs.py"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi

say "private layouts: partheal's copies match PostgreSQL $PG's own source"
# The struct definitions come from Debian's source package of this major (a
# download the first time, then the cache); see src/pg/compat.hpp.
source "$PARTHEAL_ROOT/test/majors.sh"
if [ "$PG" = 17 ]; then
  # Debian's archive lists 17's source package and serves none of its files.
  echo "skipped: no source of PostgreSQL 17 downloads here to cut BackgroundWorkerHandle from (src/pg/compat.hpp pins the copy)"
elif structs=$(majors_private_structs "$PG" | tail -1) &&
   g++ -std=c++17 -Wall -Wextra -Werror -isystem "$("$PGBIN/pg_config" --includedir-server)" \
     -I"$PARTHEAL_ROOT/src" -DPRIVATE_STRUCTS="\"$structs\"" -fsyntax-only \
     "$PARTHEAL_ROOT/test/unit/private_layout_test.cpp"; then
  passed=$((passed + 1)); echo "ok - BackgroundWorkerHandle matches $(head -1 "$structs")"
else
  failed=$((failed + 1)); echo "not ok - partheal's copy of PostgreSQL $PG's private structs"
fi

# The test lists and their options are the Makefile's PGXS variables
# (REGRESS, REGRESS_OPTS, ISOLATION, PROVE_TESTS), so make test and make
# installcheck run the same tests.
make_var() { make -s --no-print-directory -C "$work" "print-$1" PG_CONFIG="$PGBIN/pg_config"; }
regress_opts=$(make_var REGRESS_OPTS)
regress=$(make_var REGRESS)
tap_tests=$(make_var PROVE_TESTS)
# On 17 (upstream's binaries beside 15 and 18, which run everything), the
# files that test what differs between majors, each marked so on a line of
# its own: "# TAP majors: every".
if [ "$PG" = 17 ]; then
  tap_tests=$(cd "$work" && grep -lx '# TAP majors: every' $tap_tests | xargs)
fi

timing "static checks"

say "pg_regress: the SQL surface and bad input"
as_pg "$PGXS_TEST/regress/pg_regress" --temp-instance="$work/tmp_regress" \
  --temp-config="$work/test/partheal.conf" --bindir="$regress_bin" $regress_opts \
  $regress 2>&1 | tee regress.log || true
count regress.log
[ -f test/regress/regression.diffs ] && cat test/regress/regression.diffs
timing "pg_regress"

# The specs run by make installcheck, against a running cluster set up as
# the Makefile says (test/partheal.conf), which also proves that make
# installcheck works; its TAP tests are left to the next step.
say "isolation: interleaved sessions (make installcheck against a running server)"
if [ -n "${VALGRIND:-}" ]; then
  echo "skipped under VALGRIND: their races and lock timeouts need native speed"
else
mkdir -p iso && chown postgres:postgres iso 2>/dev/null || true
start_cluster "$work/iso" < "$work/test/partheal.conf"
as_pg make -s --no-print-directory -C "$work" installcheck REGRESS= TAP_TESTS= PG_CONFIG="$PGBIN/pg_config" \
  PGHOST="$CLUSTER_DIR" PGPORT="$CLUSTER_PORT" PGUSER=postgres 2>&1 | tee iso.log || true
stop_cluster
count iso.log
[ -f test/isolation/regression.diffs ] && cat test/isolation/regression.diffs
fi
timing "isolation"

say "TAP: restarts, killed workers, timeouts"
tap_timer "$work"
template=$(initdb_template "$work")
# Two lanes. A file whose assertions time the server (a writer's longest
# wait, a lock budget, a rate over a watch) says so on a line of its own,
# "# TAP lane: alone", and runs with nothing beside it; the others (the
# races, which only gain from a loaded machine, and the files that check
# outcomes, not times) run two at a time first. Under valgrind, one at a
# time.
# The two-at-a-time lane starts with its longest files ("# TAP lane:
# long"), so that the short ones fill the other slot beside them.
alone=() beside=() long=()
for t in $tap_tests; do
  if grep -qx '# TAP lane: alone' "$t"; then alone+=("$t")
  elif grep -qx '# TAP lane: long' "$t"; then long+=("$t")
  else beside+=("$t"); fi
done
beside=(${long[@]+"${long[@]}"} ${beside[@]+"${beside[@]}"})
tap_runs=0
: > tap.log
tap_lane() {  # tap_lane JOBS FILE...: one prove run, its output added to tap.log
  local jobs=$1; shift
  [ $# -gt 0 ] || return 0
  tap_runs=$((tap_runs + 1))
  as_pg env PATH="$tap_path" TESTDIR="$work" PG_REGRESS="$PGXS_TEST/regress/pg_regress" INITDB_TEMPLATE="$template" \
    PERL5LIB="$TAP_PERL" prove -v -j"$jobs" --exec "$work/tap_timer" "$@" 2>&1 | tee -a tap.log || true
}
tap_lane "$([ -n "${VALGRIND:-}" ] && echo 1 || echo 2)" "${beside[@]}"
# Under make test-all, the alone lane waits for the machine to itself; the
# wait is a row of its own in the table of where the time went.
# (So is the wait after it, for the shared hold again: another suite's
# alone lane may be next.)
wait_t0=$(date +%s%N)
quiet_lock x
wait_ms=$(( ($(date +%s%N) - wait_t0) / 1000000 ))
tap_lane 1 "${alone[@]}"
wait_t0=$(date +%s%N)
quiet_lock s
wait_ms=$(( wait_ms + ($(date +%s%N) - wait_t0) / 1000000 ))
TIMING_T0=$((TIMING_T0 + wait_ms * 1000000))
timing_tap "TAP" "$work"
if [ -n "${PARTHEAL_QUIET_LOCK:-}" ]; then TIMINGS+=("waiting for the machine to itself|$wait_ms"); fi
tap_ok=$(grep -cE '^ok [0-9]+' tap.log || true)
tap_bad=$(grep -cE '^not ok [0-9]+' tap.log || true)
# Each prove run ends on its Result line; one missing is a run that died.
[ "$tap_runs" -gt 0 ] && [ "$(grep -c '^Result: PASS' tap.log)" = "$tap_runs" ] || tap_bad=$((tap_bad > 0 ? tap_bad : 1))
passed=$((passed + tap_ok)); failed=$((failed + tap_bad))

say "assertions: no server of any test failed one"
# An assertion-enabled server (PG=18) aborts the backend that fails one and
# restarts the cluster; a test that tolerates a crash would not notice, so
# every server log is read. Debian's 15 has no assertions: nothing to read.
if "$PGBIN/pg_config" --configure | grep -q -- '--enable-cassert'; then
  server_logs=$(ls test/regress/log/*.log iso/server.log log/*.log tmp_check/log/*.log 2>/dev/null |
                grep -v -e '/regress_log_' -e '/initdb.log$' || true)
  traps=$(grep -l 'TRAP: ' $server_logs /dev/null 2>/dev/null || true)
  if [ -z "$server_logs" ]; then
    failed=$((failed + 1)); echo "not ok - no server log found to read"
  elif [ -z "$traps" ]; then
    passed=$((passed + 1)); echo "ok - no TRAP in any of $(wc -w <<<"$server_logs") server logs"
  else
    failed=$((failed + 1)); echo "not ok - assertion failures:"; grep -h -A2 'TRAP: ' $traps | head -40
  fi
else
  echo "skipped: $("$PGBIN/postgres" --version) is built without assertions"
fi

say "docs: the README, CONTRIBUTING.md and docs speak the project's own terms"
# Words a user of partheal cannot know: the design records' names, the
# issue tracker's numbers.
if internal=$(cd "$PARTHEAL_ROOT" && grep -niE '\bseed [0-9]|\bseeds?\b|\bthe lab\b|\bissue [0-9]+' README.md CONTRIBUTING.md docs/*.md); then
  failed=$((failed + 1)); echo "not ok - internal words in the docs:"; echo "$internal"
else
  passed=$((passed + 1)); echo "ok - no internal words in README.md, CONTRIBUTING.md and docs/"
fi

timing "server logs and doc words"

say "demo: make demo explains itself and leaves nothing behind"
if demo_out=$(bash "$PARTHEAL_ROOT/test/demo.sh" 2>&1); then
  demo_dir=$(sed -n 's/^The throwaway cluster is stopped now, and its folder (\(.*\)) removed:$/\1/p' <<<"$demo_out")
  demo_ok=1
  for want in 'someone made one' ' 20 | message_log_p20' 'healed for a plain INSERT' \
              'insert_heals counts the plain INSERTs' ' 4 |            19 |     1 |            1 |' \
              'PHL01: a heal' 'next_reason     | when ids reach 180, the create-ahead mark' \
              'To try partheal on a server of your own' 'partheal_manage made [0, 100) to [400, 500)' \
              "events_p500 | FOR VALUES FROM ('500') TO ('600')"; do
    grep -qF -- "$want" <<<"$demo_out" || { demo_ok=0; echo "missing from the demo's output: $want"; }
  done
  if [ -z "$demo_dir" ] || [ -e "$demo_dir" ]; then demo_ok=0; echo "the demo's folder was not removed: $demo_dir"; fi
else
  demo_ok=0; echo "$demo_out" | tail -20
fi
if [ "$demo_ok" = 1 ]; then passed=$((passed + 1)); echo "ok - make demo"; else failed=$((failed + 1)); echo "not ok - make demo"; fi
timing "demo"

say "one codebase: only src/pg/compat.hpp tests PG_VERSION_NUM"
if others=$(cd "$PARTHEAL_ROOT" && grep -rln 'PG_VERSION_NUM\|PG_MAJORVERSION' src test/unit --include='*.cpp' --include='*.hpp' |
            grep -v '^src/pg/compat.hpp$'); then
  failed=$((failed + 1)); echo "not ok - version tests outside src/pg/compat.hpp:"; echo "$others"
else
  passed=$((passed + 1)); echo "ok - every version difference is in src/pg/compat.hpp"
fi

say "format: clang-format agrees with every C++ file"
if (cd "$PARTHEAL_ROOT" && clang-format --dry-run --Werror src/*.cpp src/*/*.cpp src/*.hpp src/*/*.hpp); then
  passed=$((passed + 1)); echo "ok - formatted"
else
  failed=$((failed + 1)); echo "not ok - run make format"
fi

if [ -n "${SANITIZE:-}" ]; then
  say "sanitizer: reports from any test process"
  reports=$(cat "$work"/sanitizer/report* 2>/dev/null | grep -c 'runtime error:' || true)
  if [ "$reports" -eq 0 ]; then
    passed=$((passed + 1)); echo "ok - no sanitizer reports"
  else
    failed=$((failed + 1)); echo "not ok - $reports sanitizer reports in $work/sanitizer"
  fi
fi

if [ -n "${VALGRIND:-}" ]; then
  say "valgrind: memcheck reports from every postgres process ($(( $(date +%s) - valgrind_started ))s under valgrind)"
  valgrind_scan
fi

timing "version, format and memory checks"
quiet_lock u
timing_table

say "summary (logs in $work)"
echo "partheal PostgreSQL $PG ($("$PGBIN/postgres" --version | sed -E 's/^postgres \(PostgreSQL\) ([^ ]+).*/\1/')): $passed passed, $failed failed"
[ "$failed" -eq 0 ]
