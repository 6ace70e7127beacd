#!/usr/bin/env bash
# make check-headers PG=N: checks every source file with -Wall -Wextra
# -Werror against the server headers of major N, from Debian's
# postgresql-server-dev-N package, unpacked into the cache and never
# installed: -fsyntax-only, one file per core at a time (what needs code
# generation to be judged, -O2's flow warnings, the builds of 15, 17 and
# 18 judge, on the same sources). No server of 19 can be had here, so this
# is what says partheal builds on it (and on 17, when upstream's binaries
# cannot be downloaded). Ends on one line:
#   partheal PostgreSQL N headers (VERSION): K of M files compile
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/majors.sh"
major=${1:-}
case "$major" in
  15|16|17|18|19) ;;
  *) echo "usage: make check-headers PG=N, N one of 17, 18, 19 (15 is Debian's own)" >&2; exit 2 ;;
esac
install_packages
timing "packages"
inc=$(majors_headers "$major" | tail -1)
timing "headers of $major"
version=$(cat "$inc/../../../../../.complete" 2>/dev/null | awk '{print $2}')
work=$(mktemp -d /tmp/partheal-headers.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Those headers were configured on a newer glibc than Debian 12's: their
# pg_config.h says the C library has strlcpy and strlcat, so port.h does not
# declare them, and glibc 2.36 does not either. Declared here, for the
# compile only.
cat > "$work/glibc_2_38.h" <<'H'
#include <stddef.h>
extern "C" size_t strlcpy(char*, const char*, size_t);
extern "C" size_t strlcat(char*, const char*, size_t);
H
cd "$PARTHEAL_ROOT"
mkdir -p "$work/err"
check_one() {  # check_one FILE: its errors, if any, in $work/err
  g++ -std=c++17 -fsyntax-only -fPIC -Wall -Wextra -Werror -isystem "$inc" -Isrc \
    -include "$work/glibc_2_38.h" "$1" 2> "$work/err/${1//\//_}" && rm -f "$work/err/${1//\//_}"
}
export -f check_one; export inc work
files=(src/*.cpp src/*/*.cpp)
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 1 bash -c 'check_one "$1"' _ || true
bad=0
for f in "${files[@]}"; do
  if [ -e "$work/err/${f//\//_}" ]; then
    bad=$((bad + 1)); echo "not ok - $f"; head -20 "$work/err/${f//\//_}"
  fi
done
ok=$(( ${#files[@]} - bad ))
timing "compile"
# Why this major is compiled only: its source package asked for again (a
# server of it is built from there, as 18's is, once it downloads).
why=
if [ "$major" != 18 ]; then
  if why=$( (majors_source_tarball "$major" >/dev/null) 2>&1 ); then
    why="; its source package downloads now, so a server of it can be built"
  else
    why="; not run: $(tail -1 <<<"$why")"
  fi
  timing "its source package, asked for"
fi
quiet_lock u
timing_table
echo "partheal PostgreSQL $major headers ($version): $ok of $((ok + bad)) files compile$why"
[ "$bad" -eq 0 ]
