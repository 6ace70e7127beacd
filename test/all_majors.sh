#!/usr/bin/env bash
# make test-all, the command CI runs: the whole suite on Debian's
# PostgreSQL 15 and on an assertion-enabled 18 (built once into the cache),
# the header compile for 17 and 19, and the Citus suite when Citus's source
# is there. Ends on one line per major, then the total.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
logs=$(mktemp -d /tmp/partheal-all.XXXXXX)
lines=()
passed=0; failed=0
started=$(date +%s)

step() {  # step NAME LOG COMMAND...: runs it, keeps its closing line
  local name=$1 log=$2 t0 line p f; shift 2
  t0=$(date +%s)
  printf '\n##### %s\n' "$name"
  "$@" 2>&1 | tee "$log"
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
  lines+=("$line ($(( $(date +%s) - t0 ))s)")
}

step "PostgreSQL 15" "$logs/15.log" make -C "$root" -s test PG=15
step "PostgreSQL 18" "$logs/18.log" make -C "$root" -s test PG=18
step "PostgreSQL 17 headers" "$logs/17.log" make -C "$root" -s check-headers PG=17
step "PostgreSQL 19 headers" "$logs/19.log" make -C "$root" -s check-headers PG=19
# Citus's source is not in any package registry: the TAP suite on a Citus
# cluster runs when it is beside the project (or CITUS_SOURCE names it).
citus_source=${CITUS_SOURCE:-$root/../shared/deps/citus-13.2.2.tar.gz}
if [ -e "$citus_source" ]; then
  step "Citus" "$logs/citus.log" env CITUS_SOURCE="$citus_source" make -C "$root" -s test-citus
else
  printf '\n##### Citus\nskipped: no Citus source at %s (set CITUS_SOURCE)\n' "$citus_source"
  lines+=("partheal with Citus: skipped, no Citus source at $citus_source")
fi

printf '\n##### every major (logs in %s)\n' "$logs"
printf '%s\n' "${lines[@]}"
echo "partheal all majors: $passed passed, $failed failed in $(( $(date +%s) - started ))s"
[ "$failed" -eq 0 ]
