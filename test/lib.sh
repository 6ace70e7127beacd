# Shared by test/run.sh, test/demo.sh and test/bench/run.sh: set up a fresh
# Debian 12 machine (run as root) and build and install partheal.
set -euo pipefail

PARTHEAL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf '\n== %s\n' "$*"; }

# make test-all runs some steps side by side (test/all_majors.sh), and names
# a lock file in PARTHEAL_QUIET_LOCK: each script holds it shared while it
# runs, and test/run.sh holds it exclusive for the TAP files that time the
# server (its "alone" lane), so that nothing runs beside those. A script
# started by one that holds it (make demo from make test) shares that hold.
quiet_lock() {  # quiet_lock s|x|u: holds it shared or exclusive, or lets it go
  [ -n "${PARTHEAL_QUIET_LOCK:-}" ] || return 0
  flock -u 6
  [ "$1" != u ] || return 0
  # A server left running by a killed test keeps the lock it inherited: after
  # 30 minutes the run goes on, and says so, rather than hang.
  flock -w 1800 "-$1" 6 || echo "partheal: waited 30 minutes for $PARTHEAL_QUIET_LOCK, going on without it" >&2
}
if [ -n "${PARTHEAL_QUIET_LOCK:-}" ] && [ -z "${PARTHEAL_QUIET_HELD:-}" ]; then
  exec 6>>"$PARTHEAL_QUIET_LOCK"
  flock -s 6
  export PARTHEAL_QUIET_HELD=1
fi

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
# builds into the cache (use_major, after install_packages), PG=17 against
# upstream's 17 binaries that majors.sh puts there; the default is Debian's
# 15. TAP_PERL is where PostgreSQL::Test::Cluster comes from: the major's
# own, or Debian's 15 where the major brings none.
PG=${PG:-15}
PGBIN=/usr/lib/postgresql/15/bin
PGXS_TEST=/usr/lib/postgresql/15/lib/pgxs/src/test
TAP_PERL=$PGXS_TEST/perl
export PATH="$PGBIN:$PATH"
use_major() {
  local prefix
  case "$PG" in
    15) ;;
    17|18)
      source "$PARTHEAL_ROOT/test/majors.sh"
      if [ "$PG" = 18 ]; then
        prefix=$(majors_build_server 18 | tail -1)
      else
        prefix=$(majors_upstream_server 17 | tail -1)
      fi
      [ -x "$prefix/bin/pg_config" ] || { echo "no server of PostgreSQL $PG to run (see above)" >&2; exit 1; }
      PGBIN=$prefix/bin
      PGXS_TEST=$("$PGBIN/pg_config" --pkglibdir)/pgxs/src/test
      [ -d "$PGXS_TEST/perl" ] && TAP_PERL=$PGXS_TEST/perl
      export PATH="$PGBIN:$PATH" ;;
    *) echo "PG=$PG: the suite runs on 15, 17 and 18; for 19 see make check-headers" >&2; exit 2 ;;
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
    # make test-all's steps side by side may install at once: one apt-get
    # at a time (apt itself fails on a held lock rather than waiting).
    local cache=${PARTHEAL_CACHE:-/var/cache/partheal}
    mkdir -p "$cache"
    (
      flock 5
      say "installing ${missing[*]}"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
    ) 5>>"$cache/.apt.lock"
  fi
}

build_and_install() {
  use_major
  say "building partheal against $PG_VERSION_LINE"
  build_into "$PGBIN/pg_config"
}

# Builds partheal against the pg_config $1 and installs it into that server.
# The build is a copy of the tree's sources kept in the cache, one per
# server version: a file whose content has not changed keeps its time there,
# so make rebuilds only what changed, and nothing for a fresh clone of a
# tree built before. The tree's own objects are left to the developer's make.
build_into() {
  local pg_config=$1 dir f
  dir=${PARTHEAL_CACHE:-/var/cache/partheal}/build/pg$("$pg_config" --version | awk '{print $2}')${SANITIZE:+-$SANITIZE}
  mkdir -p "$dir"
  exec 7>"$dir.lock"
  flock 7
  (cd "$PARTHEAL_ROOT" && find Makefile partheal.control sql src -type f \
     \( -name Makefile -o -name '*.control' -o -name '*.sql' -o -name '*.cpp' -o -name '*.hpp' \)) > "$dir.files"
  while IFS= read -r f; do
    if ! cmp -s "$PARTHEAL_ROOT/$f" "$dir/$f"; then
      mkdir -p "$dir/$(dirname "$f")" && cp "$PARTHEAL_ROOT/$f" "$dir/$f"
    fi
  done < "$dir.files"
  # A source gone from the tree goes from the copy, with its object, and
  # the library is linked again without it.
  (cd "$dir" && find sql src -type f \( -name '*.sql' -o -name '*.cpp' -o -name '*.hpp' \)) |
    while IFS= read -r f; do
      grep -qxF "$f" "$dir.files" || rm -f "$dir/$f" "$dir/${f%.cpp}.o" "$dir/partheal.so"
    done
  make -C "$dir" -s -j"$(nproc)" PG_CONFIG="$pg_config"
  # Installed only when something differs: under make test-all, Citus's
  # suite loads the library from Debian's 15 while 18's run builds for its
  # dump test there, and an install rewrites the files.
  local lib ext
  lib=$("$pg_config" --pkglibdir); ext=$("$pg_config" --sharedir)/extension
  if ! cmp -s "$dir/partheal.so" "$lib/partheal.so" || ! cmp -s "$dir/partheal.control" "$ext/partheal.control" ||
     ! (cd "$dir/sql" && for f in *.sql; do cmp -s "$f" "$ext/$f" || exit 1; done); then
    make -C "$dir" -s install PG_CONFIG="$pg_config"
  fi
  flock -u 7
}

# The same for a second server: 012_dump_15_to_18.pl's 15 under PG=18.
install_into() {
  say "building partheal against $("$1" --version) too"
  build_into "$1"
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
# One initdb for every TAP node of a run: a data directory made as
# PostgreSQL::Test::Cluster's init makes one (trust, no sync), which its
# init copies when INITDB_TEMPLATE names it (test/t/PartHeal.pm does the same
# on 15). Prints its path.
initdb_template() {
  as_pg "$PGBIN/initdb" -D "$1/initdb_template" -A trust -N >/dev/null
  echo "$1/initdb_template"
}
psql_c() { as_pg psql -X -h "$CLUSTER_DIR" -p "$CLUSTER_PORT" -d postgres -v ON_ERROR_STOP=1 "$@"; }
pgbench_c() { as_pg pgbench -h "$CLUSTER_DIR" -p "$CLUSTER_PORT" "$@" postgres; }
