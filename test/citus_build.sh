# Sourced by test/citus.sh (after lib.sh): Citus built from its source, once
# per machine and server version, into the cache that test/majors.sh uses.
CITUS_CACHE=${PARTHEAL_CACHE:-/var/cache/partheal}

# What Citus's configure and build need beyond PostgreSQL's server headers.
CITUS_BUILD_PACKAGES=(build-essential libcurl4-openssl-dev libkrb5-dev liblz4-dev libzstd-dev
                      libssl-dev libxml2-dev libxslt1-dev)

# Builds the Citus source $1 (a tarball or a tree) against the pg_config $2,
# unless a build of that tarball for that server is in the cache, and
# installs it into that server. Prints Citus's version on the last line.
citus_build_and_install() {
  local source=$1 pg_config=$2 key dir src
  mkdir -p "$CITUS_CACHE"
  exec 8>"$CITUS_CACHE/.citus-lock"
  flock 8
  if [ -d "$source" ]; then
    key=tree-$(date +%s)  # a tree may change: built every time
  else
    key=$(sha256sum "$source" | cut -c1-12)
  fi
  # $dir/root is the install as the server's own paths, staged.
  dir="$CITUS_CACHE/citus-$key-pg$("$pg_config" --version | awk '{print $2}')"
  if [ ! -e "$dir/complete" ]; then
    src=$(mktemp -d /tmp/citus-build.XXXXXX)
    if [ -d "$source" ]; then
      cp -a "$source/." "$src/"
    else
      tar -xzf "$source" -C "$src" --strip-components=1
    fi
    say "building Citus $(citus_source_version "$src") from $source" >&2
    citus_patch_for_server "$src" "$pg_config"
    rm -rf "$dir"
    local started
    started=$(date +%s)
    # No LLVM bitcode (half the build time; nothing here uses the JIT), and
    # none of an outer make's state (this runs under make test-citus).
    (unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES
     cd "$src" &&
     ./configure -q PG_CONFIG="$pg_config" >/dev/null &&
     make -s -j"$(nproc)" with_llvm=no >/dev/null &&
     make -s install with_llvm=no DESTDIR="$dir/root" >/dev/null) >&2 || {
      echo "building Citus failed (source in $src)" >&2; return 1; }
    citus_source_version "$src" > "$dir/version"
    echo "built $(date -u +%FT%TZ) in $(( $(date +%s) - started ))s from $source" > "$dir/complete"
    rm -rf "$src"
  fi
  cp -a "$dir/root/." /
  flock -u 8
  cat "$dir/version"
}

citus_source_version() {
  sed -n "s/^AC_INIT(\[Citus\], \[\([^]]*\)\].*/\1/p" "$1/configure.ac" | head -1
}

# Citus 13.2.2 defines its own static have_createdb_privilege() for servers
# before 16, and Debian's 15.20 declares the function in dbcommands.h (a
# minor release's backport): with both, the compile fails. The server's own
# is used when its header has it.
citus_patch_for_server() {
  local src=$1 pg_config=$2 compat
  compat="$src/src/include/pg_version_compat.h"
  if grep -q 'extern bool have_createdb_privilege' "$("$pg_config" --includedir-server)/commands/dbcommands.h" 2>/dev/null &&
     grep -q '^have_createdb_privilege(void)' "$compat"; then
    python3 - "$compat" <<'EOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
text, n = re.subn(r'\n\nstatic inline bool\nhave_createdb_privilege\(void\)\n\{.*?\n\}\n', '\n', text, flags=re.S)
if n != 1:
    sys.exit("pg_version_compat.h: Citus's have_createdb_privilege() not found as expected")
open(path, 'w').write(text)
EOF
  fi
}
