# VALGRIND=1 make test: sourced by test/run.sh after lib.sh. Runs the
# clusters' postgres processes under valgrind memcheck with PostgreSQL's own
# suppressions (src/tools/valgrind.supp, fetched once from Debian's source
# package and cached) and ours (test/valgrind/partheal.supp), then counts every
# process log that has an error the suppressions did not cover.

VALGRIND_CACHE=${PARTHEAL_CACHE:-/var/cache/partheal}/valgrind
PG_SUPP="$VALGRIND_CACHE/postgresql-15-valgrind.supp"
# A major built from source (test/majors.sh) keeps its own file beside it.
[ "${PG:-15}" = 15 ] || PG_SUPP="$(dirname "$PGBIN")/valgrind.supp"

# PostgreSQL's suppressions. Debian ships them in no binary package, so they
# come from the postgresql-15 source package, through a private apt setup
# (deb-src entries made from the machine's own deb entries, lists under the
# cache dir) that leaves the machine's apt state alone. Only the one file is
# kept: later runs are offline.
valgrind_fetch_suppressions() {
  [ -s "$PG_SUPP" ] && return 0
  say "fetching PostgreSQL's valgrind.supp from Debian's postgresql-15 source package"
  local apt="$VALGRIND_CACHE/apt" f
  rm -rf "$apt" && mkdir -p "$apt/sources" "$apt/lists/partial" "$apt/cache" "$apt/download"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && sed -E 's/^Types:.*/Types: deb-src/' "$f" > "$apt/sources/$(basename "$f")"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] && sed -nE 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >> "$apt/sources/from-lists.list"
  done
  local opts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt/sources"
              -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache"
              -o APT::Sandbox::User=root -qq)
  if ! apt-get "${opts[@]}" update; then
    echo "could not read Debian's source package lists (deb-src of the entries in /etc/apt)" >&2
    return 1
  fi
  # The installed version first; the security archive's sources may not be
  # reachable, so any other version of PostgreSQL 15 is next (the file
  # changes little within a major version; the one used is printed).
  local installed versions v got=
  installed=$(dpkg-query -W -f='${source:Version}' postgresql-15 2>/dev/null || true)
  versions=$( { echo "$installed"; apt-cache "${opts[@]}" showsrc postgresql-15 |
                sed -n 's/^Version: //p' | sort -rV; } | awk 'NF && !seen[$0]++')
  for v in $versions; do
    if (cd "$apt/download" && apt-get "${opts[@]}" source --download-only "postgresql-15=$v" >/dev/null 2>&1); then
      got=$v; break
    fi
    echo "postgresql-15 $v: source not downloadable, trying the next version"
  done
  if [ -z "$got" ]; then
    echo "could not download the postgresql-15 source package (versions tried: $(echo $versions))" >&2
    return 1
  fi
  local orig=("$apt/download"/postgresql-15_*.orig.tar.*)
  tar -xf "${orig[0]}" -C "$apt/download" --wildcards '*/src/tools/valgrind.supp'
  {
    echo "# src/tools/valgrind.supp of PostgreSQL, from Debian's postgresql-15 $got source package"
    cat "$apt/download"/*/src/tools/valgrind.supp
  } > "$PG_SUPP.tmp"
  mv "$PG_SUPP.tmp" "$PG_SUPP" && chmod 644 "$PG_SUPP"
  rm -rf "$apt"
}

# A bindir whose postgres runs under valgrind: $1 is the work dir. Sets
# VALGRIND_BIN and VALGRIND_LOGS. Every other program is a symlink to the real
# one, except pg_ctl: a script that gives start and restart the wrapper with
# -p. (A copy would find it on start, but restart takes the path that the
# running postmaster wrote to postmaster.opts: the real postgres, which
# valgrind ran.) initdb keeps the real postgres for its bootstrap.
valgrind_setup() {
  local work=$1 p
  VALGRIND_BIN="$work/valgrind/bin"
  VALGRIND_LOGS="$work/valgrind/logs"
  mkdir -p "$VALGRIND_BIN" "$VALGRIND_LOGS"
  for p in "$PGBIN"/*; do
    case "$(basename "$p")" in
      postgres|postmaster) ;;
      pg_ctl) ;;
      *) ln -s "$p" "$VALGRIND_BIN/$(basename "$p")" ;;
    esac
  done
  echo "valgrind suppressions: $PG_SUPP ($(head -1 "$PG_SUPP" | sed 's/^# //'))"
  local supps=(--suppressions="$PG_SUPP")
  [ -s "$PARTHEAL_ROOT/test/valgrind/partheal.supp" ] &&
    cp "$PARTHEAL_ROOT/test/valgrind/partheal.supp" "$work/valgrind/" &&
    supps+=(--suppressions="$work/valgrind/partheal.supp")
  # Each postmaster start gets its own stamp, so logs of different clusters
  # never share a name even if a pid comes round again.
  cat > "$VALGRIND_BIN/postgres" <<WRAP
#!/bin/sh
# Written by test/valgrind/valgrind.sh. Version and config probes (pg_ctl,
# initdb) run without valgrind.
for a in "\$@"; do
  case "\$a" in -V|--version|-C|--describe-config|-\?|--help) exec $PGBIN/postgres "\$@" ;; esac
done
PARTHEAL_VG_START=\$(date +%s%N); export PARTHEAL_VG_START
exec valgrind --tool=memcheck --trace-children=yes ${supps[*]} \\
  --error-limit=no --read-var-info=yes --track-origins=yes --num-callers=30 --leak-check=no \\
  --error-markers=VALGRINDERROR-BEGIN,VALGRINDERROR-END --gen-suppressions=all \\
  --log-file=$VALGRIND_LOGS/%q{PARTHEAL_VG_START}-%p.log \\
  $PGBIN/postgres "\$@"
WRAP
  cat > "$VALGRIND_BIN/pg_ctl" <<WRAP
#!/bin/sh
# Written by test/valgrind/valgrind.sh.
for a in "\$@"; do
  case "\$a" in start|restart) exec $PGBIN/pg_ctl -p $VALGRIND_BIN/postgres "\$@" ;; esac
done
exec $PGBIN/pg_ctl "\$@"
WRAP
  chmod 755 "$VALGRIND_BIN/postgres" "$VALGRIND_BIN/pg_ctl"
  ln -s postgres "$VALGRIND_BIN/postmaster"
  cp "$PARTHEAL_ROOT/test/valgrind/tap.conf" "$work/valgrind/tap.conf"
  chown -R postgres:postgres "$work/valgrind"
  # Statements and server starts take 10 to 50 times longer.
  export PG_TEST_TIMEOUT_DEFAULT=${PG_TEST_TIMEOUT_DEFAULT:-1200}
  export PGCTLTIMEOUT=${PGCTLTIMEOUT:-600}
  export PARTHEAL_VALGRIND=1
  # Each cluster loads the installed library when it starts: note which one.
  VALGRIND_SO=$(md5sum < "$("$PGBIN/pg_config" --pkglibdir)/partheal.so")
}

# Counts the logs: every log with a nonzero ERROR SUMMARY, or with an error
# report but no summary (a killed process), is one failure, and its first
# report is printed. No log at all is a failure too.
valgrind_scan() {
  local logs=("$VALGRIND_LOGS"/*.log) f n bad=0 summaries=0 unfinished=0 total=0
  [ -e "${logs[0]}" ] || logs=()
  total=${#logs[@]}
  for f in "${logs[@]}"; do
    n=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$f" | tail -1)
    if [ -n "$n" ]; then summaries=$((summaries + 1)); else unfinished=$((unfinished + 1)); fi
    if [ "${n:-0}" -gt 0 ] || grep -q 'VALGRINDERROR-BEGIN' "$f"; then
      bad=$((bad + 1))
      echo "not ok - $f: ${n:-?} unsuppressed errors ($(grep -m1 'Command: ' "$f" | sed 's/.*Command: //')); the first:"
      # One reader, no pipe: a reader that stops early would SIGPIPE a writer.
      awk '/VALGRINDERROR-BEGIN/ {on = 1} on {print} on && /VALGRINDERROR-END/ {exit}' "$f"
    fi
  done
  if [ "$(md5sum < "$("$PGBIN/pg_config" --pkglibdir)/partheal.so")" != "$VALGRIND_SO" ]; then
    echo "warning: the installed partheal.so was replaced during the run (another make install?);" \
      "clusters started after that ran another build"
  fi
  echo "valgrind: $total process logs checked ($summaries with an ERROR SUMMARY, $unfinished ended without one, e.g. killed), $bad with unsuppressed errors"
  if [ "$total" -eq 0 ]; then
    failed=$((failed + 1)); echo "not ok - no valgrind logs: nothing ran under valgrind"
  elif [ "$bad" -eq 0 ]; then
    passed=$((passed + 1)); echo "ok - no unsuppressed valgrind errors"
  else
    failed=$((failed + bad))
  fi
}
