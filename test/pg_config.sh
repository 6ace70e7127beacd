#!/usr/bin/env bash
# Prints the pg_config of PostgreSQL major $1 on this machine, for the
# Makefile's PG=N: Debian's own for 15, the assertion-enabled build in the
# cache for 18 (built now if it is not there yet; that needs root), upstream's
# binaries with Debian's headers for 17 (put there now, the same). Majors
# that are here as headers only print nothing and say why on stderr.
set -euo pipefail
major=${1:?usage: pg_config.sh MAJOR}
case "$major" in
  15)
    # Printed even before it is installed: make test installs it.
    [ -x /usr/lib/postgresql/15/bin/pg_config ] ||
      echo "PostgreSQL 15 is not installed yet: apt-get install postgresql-server-dev-15 (make test does)" >&2
    echo /usr/lib/postgresql/15/bin/pg_config ;;
  18)
    source "$(dirname "$0")/lib.sh"
    source "$(dirname "$0")/majors.sh"
    prefix=$(majors_build_server 18 | tail -1) && echo "$prefix/bin/pg_config" ;;
  17)
    source "$(dirname "$0")/lib.sh"
    source "$(dirname "$0")/majors.sh"
    # Exits 3 when upstream's package could not be downloaded.
    prefix=$(majors_upstream_server 17 | tail -1) || exit $?
    echo "$prefix/bin/pg_config" ;;
  16|19)
    echo "PostgreSQL $major cannot be built or run here (Debian's archive has its headers at most):" \
         "make check-headers PG=$major compiles partheal against its headers;" \
         "for a server of your own use make PG_CONFIG=/path/to/its/pg_config" >&2 ;;
  *)
    echo "partheal supports PostgreSQL 15 to 19, not \"$major\"" >&2 ;;
esac
