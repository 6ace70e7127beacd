#!/usr/bin/env bash
# make test-all, the command CI runs: the whole suite on Debian's
# PostgreSQL 15 and on an assertion-enabled 18 (built once into the cache),
# pg_regress, the isolation specs and the TAP files that differ between
# majors on upstream's 17, the header compile for 19 (and for 17 when its
# binaries cannot be had), and the Citus suite when Citus's source is there.
# Ends on one line per major, then the total.
#
# Some steps run side by side: 19's header compile beside 15's suite, 17's
# suite and Citus's beside 18's. Each holds the lock PARTHEAL_QUIET_LOCK
# names shared, and a suite's TAP files that time the server take it
# exclusive (test/lib.sh, quiet_lock): they run with nothing beside them.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
logs=$(mktemp -d /tmp/partheal-all.XXXXXX)
export PARTHEAL_QUIET_LOCK=$logs/quiet.lock
: > "$PARTHEAL_QUIET_LOCK"
lines=()
columns=()  # "LABEL|LOG|SECONDS" per step, for the table of where the time went
beside=()   # "NAME|LOG|PID" of the steps running beside the others
passed=0; failed=0
started=$(date +%s)

step() {  # step NAME LOG COMMAND...: runs it, keeps its closing line and its times
  local name=$1 log=$2 t0; shift 2
  t0=$(date +%s)
  printf '\n##### %s\n' "$name"
  "$@" 2>&1 | tee "$log"
  record "$name" "$log" $(( $(date +%s) - t0 ))
}

# step_beside NAME LOG COMMAND...: starts it in the background, its output
# in LOG only; steps_beside_end waits for them all and shows each.
step_beside() {
  local name=$1 log=$2; shift 2
  printf '\n##### %s: started beside the next steps (log: %s)\n' "$name" "$log"
  ( t0=$(date +%s); "$@" > "$log" 2>&1; echo $(( $(date +%s) - t0 )) > "$log.seconds" ) &
  beside+=("$name|$log|$!")
}
steps_beside_end() {
  local b name log
  for b in "${beside[@]}"; do
    name=${b%%|*}; log=${b#*|}; log=${log%|*}
    wait "${b##*|}"
    printf '\n##### %s (ran beside the others)\n' "$name"
    cat "$log"
    record "$name" "$log" "$(cat "$log.seconds" 2>/dev/null || echo 0)"
  done
  beside=()
}

record() {  # record NAME LOG SECONDS: a step's closing line, counts and time
  local name=$1 log=$2 seconds=$3 line p f
  line=$(grep -E '^partheal PostgreSQL [0-9]+' "$log" | tail -1)
  if [ -z "$line" ]; then line="partheal $name: did not finish (log: $log)"; failed=$((failed + 1)); fi
  if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
    p=${BASH_REMATCH[1]}; f=${BASH_REMATCH[2]}
  elif [[ $line =~ ([0-9]+)\ of\ ([0-9]+)\ files\ compile ]]; then
    p=${BASH_REMATCH[1]}; f=$(( BASH_REMATCH[2] - BASH_REMATCH[1] ))
  else
    p=0; f=0
  fi
  passed=$((passed + p)); failed=$((failed + f))
  lines+=("$line (${seconds}s)")
  columns+=("$(basename "$log" .log)|$log|$seconds")
}

# The "time | NAME | SECONDS" lines of every step's log (test/lib.sh's
# timing_table) side by side: a row per name, a column per step.
time_table() {
  local col label log i=0
  for col in "${columns[@]}"; do
    label=${col%%|*}; log=${col#*|}; log=${log%|*}
    i=$((i + 1))
    printf 'col|%d|%s|%s\n' "$i" "$label" "${col##*|}"
    grep -E '^time \| ' "$log" 2>/dev/null | sed "s/^time /$i/"
  done | awk -F'|' '
    $1 == "col" { n = $2; label[n] = $3; wall[n] = $4; next }
    {
      name = $2; sub(/^ /, "", name); sub(/ +$/, "", name)
      v = $3; gsub(/[ s]/, "", v)
      if (!(name in seen)) { seen[name] = ++rows; row[rows] = name }
      cell[name, $1] = v
    }
    END {
      printf "%-38s", "seconds"; for (c = 1; c <= n; c++) printf " %9s", label[c]; printf "\n"
      for (r = 1; r <= rows; r++) {
        printf "%-38s", row[r]
        for (c = 1; c <= n; c++) printf " %9s", ((row[r], c) in cell) ? cell[row[r], c] : "-"
        printf "\n"
      }
      printf "%-38s", "the step, wall clock"; for (c = 1; c <= n; c++) printf " %9s", wall[c]; printf "\n"
    }'
}

# 17 runs on upstream's binaries, which come from the npm registry: when
# they cannot be downloaded, the run says so and compiles against 17's
# headers; any other failure to set them up (a checksum that differs) fails.
bash "$root/test/pg_config.sh" 17 > "$logs/17-server.log" 2>&1
case $? in
  0) run17=(make -C "$root" -s test PG=17) ;;
  3) printf '\n##### PostgreSQL 17: no server to run (%s); its headers only\n' "$(tail -1 "$logs/17-server.log")"
     run17=(make -C "$root" -s check-headers PG=17) ;;
  *) printf '\n##### PostgreSQL 17: its server could not be set up:\n'; cat "$logs/17-server.log"
     lines+=("partheal PostgreSQL 17: not ok, its server could not be set up (log: $logs/17-server.log)")
     failed=$((failed + 1))
     run17=(make -C "$root" -s check-headers PG=17) ;;
esac
# A cancelled run takes the steps beside it down with it.
trap 'kill $(jobs -p) 2>/dev/null' EXIT
citus_source=${CITUS_SOURCE:-$root/../shared/deps/citus-13.2.2.tar.gz}

step_beside "PostgreSQL 19 headers" "$logs/19.log" make -C "$root" -s check-headers PG=19
step "PostgreSQL 15" "$logs/15.log" make -C "$root" -s test PG=15
step_beside "PostgreSQL 17" "$logs/17.log" "${run17[@]}"
# Citus's source is not in any package registry: the TAP suite on a Citus
# cluster runs when it is beside the project (or CITUS_SOURCE names it).
if [ -e "$citus_source" ]; then
  step_beside "Citus" "$logs/citus.log" env CITUS_SOURCE="$citus_source" make -C "$root" -s test-citus
fi
step "PostgreSQL 18" "$logs/18.log" make -C "$root" -s test PG=18
steps_beside_end
if [ ! -e "$citus_source" ]; then
  printf '\n##### Citus\nskipped: no Citus source at %s (set CITUS_SOURCE)\n' "$citus_source"
  lines+=("partheal with Citus: skipped, no Citus source at $citus_source")
fi

printf '\n##### where the time went (seconds; indented rows break down the one above them)\n'
time_table
printf '\n##### every major (logs in %s)\n' "$logs"
printf '%s\n' "${lines[@]}"
echo "partheal all majors: $passed passed, $failed failed in $(( $(date +%s) - started ))s"
[ "$failed" -eq 0 ]
