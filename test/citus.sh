#!/usr/bin/env bash
# make test-citus: partheal on a Citus cluster. Builds Citus from its source
# once per machine (into /var/cache/partheal), installs it and partheal into
# Debian's PostgreSQL 15, and runs test/citus/*.pl, each of which starts a
# coordinator and two workers on loopback ports (test/citus/Citus.pm) and
# stops them. Ends on one line, "partheal PostgreSQL 15 (15.x) with Citus
# V: N passed, N failed".
#
# CITUS_SOURCE names the source: a tarball (as `git archive` writes one) or
# an unpacked tree. By default ../shared/deps/citus-13.2.2.tar.gz beside
# the project; without it, this prints "skipped" and exits 0 (make test-all
# says so on its own line). CITUS_TESTS picks some of the test files.
source "$(dirname "$0")/lib.sh"
source "$PARTHEAL_ROOT/test/citus_build.sh"

CITUS_SOURCE=${CITUS_SOURCE:-$PARTHEAL_ROOT/../shared/deps/citus-13.2.2.tar.gz}
if [ ! -e "$CITUS_SOURCE" ]; then
  echo "partheal with Citus: skipped, no Citus source at $CITUS_SOURCE (set CITUS_SOURCE to a tarball or a tree)"
  exit 0
fi
PG=15
install_packages "${CITUS_BUILD_PACKAGES[@]}"
timing "packages"
build_and_install
timing "build and install (15)"
citus_version=$(citus_build_and_install "$CITUS_SOURCE" "$PGBIN/pg_config" | tail -1)
timing "Citus: build (once) and install"
work=$(make_workdir)
cd "$work"

# test/citus.sh bench (make bench-citus): the figures, no tests.
if [ "${1:-}" = bench ]; then
  say "make bench-citus: one partition's cost on a Citus $citus_version cluster"
  as_pg env PATH="$PATH" TESTDIR="$work" PG_REGRESS="$PGXS_TEST/regress/pg_regress" \
    PERL5LIB="$PGXS_TEST/perl:$work/test/t:$work/test/citus" BENCH_OUT="$work/bench.md" \
    CITUS_VERSION="$citus_version" perl test/bench/citus.pl >/dev/null 2>&1 ||
    { echo "the bench failed (logs in $work/tmp_check/log)"; exit 1; }
  cat "$work/bench.md"
  exit 0
fi

say "TAP on a Citus $citus_version cluster: a coordinator and two workers"
tap_timer "$work"
template=$(initdb_template "$work")
as_pg env PATH="$PATH" TESTDIR="$work" PG_REGRESS="$PGXS_TEST/regress/pg_regress" INITDB_TEMPLATE="$template" \
  PERL5LIB="$PGXS_TEST/perl:$work/test/t:$work/test/citus" prove -v --exec "$work/tap_timer" \
  ${CITUS_TESTS:-test/citus/*.pl} 2>&1 | tee tap.log || true
timing_tap "TAP" "$work"
quiet_lock u
passed=$(grep -cE '^ok [0-9]+' tap.log || true)
failed=$(grep -cE '^not ok [0-9]+' tap.log || true)
grep -q '^Result: PASS' tap.log || failed=$((failed > 0 ? failed : 1))

timing_table

say "summary (logs in $work)"
echo "partheal PostgreSQL 15 ($("$PGBIN/postgres" --version | sed -E 's/^postgres \(PostgreSQL\) ([^ ]+).*/\1/')) with Citus $citus_version: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
