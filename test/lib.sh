# Shared by test/run.sh, test/demo.sh and test/bench/run.sh: set up a fresh
# Debian 12 machine (run as root) and build and install partheal.
set -euo pipefail

PARTHEAL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf '\n== %s\n' "$*"; }

# Where the time went: `timing NAME` charges the time since the last call
# (or since this file was sourced) to NAME, and `timing_table` prints them
# all as "time | NAME | SECONDS" lines, which make test-all gathers into one
# table for every major.
TIMING_T0=$(date +%s%N)
TIMINGS=()
timing() {
  local now
  now=$(date +%s%N)
  TIMINGS+=("$1|$(( (now - TIMING_T0) / 1000000 ))")
  TIMING_T0=$now
}
# `tap_timer DIR` writes DIR/tap_timer, a program for prove's --exec that
# runs a test file with perl and appends "FILE|MS" to DIR/tap_times;
# `timing_tap NAME DIR` charges the time since the last call to NAME and
# adds a row per file after it, indented: a breakdown, not added to it.
tap_timer() {
  cat > "$1/tap_timer" <<'SH'
#!/usr/bin/env bash
t0=$(date +%s%N)
perl "$@"
rc=$?
printf '%s|%d\n' "$(basename "${!#}")" $(( ($(date +%s%N) - t0) / 1000000 )) >> "$(dirname "$0")/tap_times"
exit $rc
SH
  chmod 755 "$1/tap_timer"
  rm -f "$1/tap_times"
}
timing_tap() {
  local name=$1 dir=$2 row
  timing "$name"
  [ -f "$dir/tap_times" ] || return 0
  while IFS= read -r row; do TIMINGS+=("  $name ${row}"); done < "$dir/tap_times"
}
timing_table() {
  local row total=0
  say "where the time went"
  for row in "${TIMINGS[@]}"; do
    printf 'time | %-36s | %7.1f s\n' "${row%|*}" "$(awk -v ms="${row##*|}" 'BEGIN { print ms / 1000 }')"
    [[ ${row%|*} == " "* ]] || total=$((total + ${row##*|}))
  done
  printf 'time | %-36s | %7.1f s\n' "total" "$(awk -v ms="$total" 'BEGIN { print ms / 1000 }')"
}

# PG=18 runs everything against the assertion-enabled 18 that majors.sh
# builds into the cache (use_major, after install_packages); the default is
# Debian's 15.
PG=${PG:-15}
PGBIN=/usr/lib/postgresql/15/bin
PGXS_TEST=/usr/lib/postgresql/15/lib/pgxs/src/test
export PATH="$PGBIN:$PATH"
use_major() {
  case "$PG" in
    15) ;;
    18)
      source "$PARTHEAL_ROOT/test/majors.sh"
      local prefix
      prefix=$(majors_build_server 18 | tail -1)
      PGBIN=$prefix/bin
      PGXS_TEST=$("$PGBIN/pg_config" --pkglibdir)/pgxs/src/test
      export PATH="$PGBIN:$PATH" ;;
    *) echo "PG=$PG: the suite runs on 15 and 18; for 17 and 19 see make check-headers" >&2; exit 2 ;;
  esac
  PG_VERSION_LINE=$("$PGBIN/postgres" --version)
}

# Installs only what is missing, so a machine that has it all stays offline.
install_packages() {
  local want=(postgresql-15 postgresql-server-dev-15 postgresql-client-15 libfmt-dev g++ make
              libipc-run-perl clang-format postgresql-15-pgaudit "$@")
  # VALGRIND=1 make test: memcheck, and tar's helpers for the source package
  # that PostgreSQL's suppressions come from (test/valgrind/valgrind.sh).
  if [ -n "${VALGRIND:-}" ]; then want+=(valgrind bzip2 xz-utils); fi
  local missing=()
  for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "missing Debian packages: ${missing[*]}; run as root to install them" >&2
      exit 1
    fi
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

build_and_install() {
  use_major
  say "building partheal against $PG_VERSION_LINE"
  make -C "$PARTHEAL_ROOT" -s -j"$(nproc)" PG_CONFIG="$PGBIN/pg_config"
  make -C "$PARTHEAL_ROOT" -s install PG_CONFIG="$PGBIN/pg_config"
}

# Builds partheal against the pg_config $1 in a scratch copy of the tree
# (the tree's own objects stay those of the major under test) and installs
# it into that server.
install_into() {
  local pg_config=$1 dir
  dir=$(mktemp -d /tmp/partheal-build.XXXXXX)
  cp -r "$PARTHEAL_ROOT/Makefile" "$PARTHEAL_ROOT/partheal.control" "$PARTHEAL_ROOT/sql" "$PARTHEAL_ROOT/src" \
    "$PARTHEAL_ROOT/test" "$dir/"
  find "$dir/src" -name '*.o' -delete
  say "building partheal against $("$pg_config" --version) too"
  make -C "$dir" -s -j"$(nproc)" PG_CONFIG="$pg_config"
  make -C "$dir" -s install PG_CONFIG="$pg_config"
  rm -rf "$dir"
}

# PostgreSQL refuses to run as root: the clusters run as the postgres user,
# in a scratch copy of the test inputs (and the Makefile, for make
# installcheck and the test lists) that this user can write to.
as_pg() {
  if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi
}

make_workdir() {
  local dir
  dir=$(mktemp -d /tmp/partheal-check.XXXXXX)
  cp -r "$PARTHEAL_ROOT/Makefile" "$PARTHEAL_ROOT/partheal.control" "$PARTHEAL_ROOT/sql" "$PARTHEAL_ROOT/test" \
    "$PARTHEAL_ROOT/docs" "$PARTHEAL_ROOT/README.md" "$PARTHEAL_ROOT/CONTRIBUTING.md" "$dir/"
  chown -R postgres:postgres "$dir" 2>/dev/null || true
  chmod 755 "$dir"
  echo "$dir"
}

# Starts a throwaway cluster with partheal preloaded in $1 (a make_workdir
# folder), stopped again when the calling script exits. Extra settings come
# on stdin. Defines psql_c and pgbench_c for it.
start_cluster() {
  CLUSTER_DIR=$1
  CLUSTER_PORT=54${RANDOM: -2}
  as_pg initdb -D "$CLUSTER_DIR/data" -A trust >/dev/null
  {
    echo "shared_preload_libraries = 'partheal'"
    echo "port = $CLUSTER_PORT"
    echo "unix_socket_directories = '$CLUSTER_DIR'"
    echo "listen_addresses = ''"
    echo "max_worker_processes = 16"
    echo "lc_messages = 'C'"
    cat
  } >> "$CLUSTER_DIR/data/postgresql.conf"
  as_pg pg_ctl -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w start >/dev/null
  trap 'as_pg pg_ctl -D "$CLUSTER_DIR/data" -m fast stop >/dev/null' EXIT
}
# Stops it before the script ends.
stop_cluster() {
  as_pg pg_ctl -D "$CLUSTER_DIR/data" -m fast stop >/dev/null
  trap - EXIT
}
psql_c() { as_pg psql -X -h "$CLUSTER_DIR" -p "$CLUSTER_PORT" -d postgres -v ON_ERROR_STOP=1 "$@"; }
pgbench_c() { as_pg pgbench -h "$CLUSTER_DIR" -p "$CLUSTER_PORT" "$@" postgres; }
