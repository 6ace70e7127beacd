#!/usr/bin/env bash
# The layers of src/, as what each folder may include besides itself. The
# arrows all point down: pg/ is the C++/PostgreSQL boundary (Citus's calls
# included); citus/ is what partheal does across a Citus cluster with them
# (the nodes' sequence positions, a window distributed before its attach,
# the lock bound on the nodes); partitions/ reads bounds and DEFAULT (the
# one model of a parent), holds the key space and names, and builds and
# runs LIKE + ATTACH; registry/ is what partheal knows of a managed table;
# worker/ holds the shared-memory protocols, the launcher, the worker's
# loop and its scheduler. ahead/ and attach/ are capabilities that include
# no other; drain/ (the worker's drain of DEFAULT) and retention/ are jobs
# of the scheduler built on attach's reconcile and lock discipline; heal/
# and manage/ read retention's rule (retention/horizon.hpp, the one header
# of retention/ for other folders); append/ (partheal_append,
# partheal_reserve) puts the heal loop and the worker's heal requests
# together; gate/ (the insert gate under plain INSERTs) puts the heal loop
# and append's way of making a partition under the executor; partheal.cpp
# wires the rest at _PG_init, the scheduler's jobs included. A header named
# *_internal.hpp is for its own folder only. errors.hpp and settings.hpp at
# the top of src/ are plain definitions (SQLSTATEs, GUC values) that every
# folder may include. Prints each include that breaks this, and exits 1 if
# any does.
set -euo pipefail
cd "$(dirname "$0")/../src"
declare -A may=(
  [pg]=""
  [citus]="pg"
  [partitions]="pg citus"
  [registry]="pg citus partitions"
  [worker]="pg citus partitions registry"
  [heal]="pg citus partitions registry retention"
  [ahead]="pg citus partitions registry worker"
  [manage]="pg citus partitions registry worker retention"
  [attach]="pg citus partitions registry"
  [append]="pg citus partitions registry worker heal ahead"
  [drain]="pg citus partitions registry worker attach"
  [retention]="pg citus partitions registry worker attach"
  [gate]="pg citus partitions registry worker heal append"
  [.]="pg citus partitions registry worker heal ahead manage attach append drain retention gate"
)
bad=0
for f in *.cpp */*.cpp */*.hpp; do
  dir=$(dirname "$f")
  if [ -z "${may[$dir]+set}" ]; then echo "$f: folder $dir/ has no place in test/check_layers.sh"; bad=1; continue; fi
  while read -r inc; do
    to=${inc%%/*}
    [ "$to" = "$dir" ] && continue
    [ -z "${may[$to]+set}" ] && continue  # a PostgreSQL header (utils/, access/, ...)
    # retention/horizon.hpp is retention's rule, below its job: the heal
    # refuses (PH005) and partheal_manage's summary counts by it too. Of
    # retention/ nothing else is for other folders.
    if [ "$to" = retention ] && [ "$dir" != . ] && [ "$inc" != retention/horizon.hpp ]; then
      echo "$f includes $inc: of retention/ only horizon.hpp is for other folders"; bad=1
    # Citus is one interface (citus/citus.hpp): Citus's own calls
    # (pg/citus.hpp) are for citus/ alone, and of citus/ only that header is
    # for other folders, so a capability asks in one line where Citus matters.
    elif [ "$to" = citus ] && [ "$inc" != citus/citus.hpp ]; then
      echo "$f includes $inc: of citus/ only citus.hpp, its one interface, is for other folders"; bad=1
    elif [ "$inc" = pg/citus.hpp ] && [ "$dir" != citus ]; then
      echo "$f includes pg/citus.hpp: Citus's calls are citus/'s; include citus/citus.hpp"; bad=1
    elif [[ "$inc" == *_internal.hpp ]]; then
      echo "$f includes $inc, which is internal to $to/"; bad=1
    elif [[ " ${may[$dir]} " != *" $to "* ]]; then
      echo "$f: $dir/ may not include $inc (it may include: ${may[$dir]:-nothing outside pg/})"; bad=1
    fi
  done < <(sed -n 's/^#include "\([a-z_]*\/[a-z_]*\.hpp\)".*/\1/p' "$f")
done
while read -r hit; do
  echo "$hit: Citus's own calls (pg::citus::) are citus/'s; ask through citus/citus.hpp"; bad=1
done < <(grep -n 'pg::citus::' $(ls */*.cpp */*.hpp *.cpp | grep -vE '^(citus|pg)/') | cut -d: -f1,2)
[ "$bad" = 0 ] && echo "ok - every include in src/ points down its layers, and Citus is asked through citus/citus.hpp"

# The worker's scheduler owns the round (worker/scheduler.hpp): the jobs
# (create-ahead's catch-up, the drain, retention) see only it of worker/,
# and nothing outside worker/ runs the worker's transactions or serves its
# heal requests.
jobs="drain/*.[ch]pp retention/*.[ch]pp ahead/catch_up.[ch]pp ahead/sequence_poll.[ch]pp ahead/clock_poll.[ch]pp"
sec=0
for f in $jobs; do
  while read -r inc; do
    case "$inc" in
      worker/scheduler.hpp|worker/back_offs.hpp) ;;
      *) echo "$f: a job includes $inc; of worker/ it may include only scheduler.hpp and back_offs.hpp"; sec=1 ;;
    esac
  done < <(sed -n 's/^#include "\(worker\/[a-z_]*\.hpp\)".*/\1/p' $f)
done
while read -r hit; do
  echo "$hit: only worker/ runs the worker's transactions and serves heal requests"; sec=1
done < <(grep -nE '\b(serve_heal_requests|in_transaction|create_in_transaction|detail::(begin|commit|abort))\(' $(ls */*.cpp */*.hpp *.cpp | grep -v '^worker/') | cut -d: -f1,2)
[ "$sec" = 0 ] && echo "ok - the jobs see only the scheduler of worker/, and only worker/ runs its transactions"
[ "$sec" = 0 ] || bad=1

# Small files: none over 450 lines. Short functions in the scheduler and
# the jobs: none over 80 lines, from its signature to its closing brace.
sec=0
for f in *.cpp */*.cpp */*.hpp; do
  n=$(wc -l < "$f")
  if [ "$n" -gt 450 ]; then echo "$f: $n lines, over 450: split it by concern"; sec=1; fi
done
python3 - worker/scheduler.cpp worker/back_offs.cpp $jobs <<'PY' || sec=1
import re, sys
bad = 0
for path in sys.argv[1:]:
    text = open(path).read()
    # Comments and literals out, newlines kept, so that braces are code.
    code = re.sub(r'//[^\n]*|/\*.*?\*/|"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'',
                  lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)
    stack = []  # per open brace: (kind, name, first line)
    last = 0    # where the text since the last ; { or } began
    for i, c in enumerate(code):
        if c == '{':
            head = code[last:i]
            outer = [k for k, _, _ in stack]
            if 'function' in outer:
                kind = 'block'
            elif re.search(r'\bnamespace\b|extern\s*$', head):
                kind = 'scope'
            elif re.search(r'\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(final\s*)?(->[^{]*)?(:[^{]*)?$', head.strip()) \
                    and not re.search(r'\b(if|for|while|switch)\s*\(', head):
                kind = 'function'
            else:
                kind = 'scope'
            name = ' '.join(head.split())[:70]
            stack.append((kind, name, code.count('\n', 0, i - len(head.lstrip('\n ;')) if head.strip() else i) + 1))
            last = i + 1
        elif c == '}':
            kind, name, first = stack.pop()
            end = code.count('\n', 0, i) + 1
            if kind == 'function' and end - first + 1 > 80:
                print(f'{path}:{first}: a function of {end - first + 1} lines, over 80: {name}')
                bad = 1
            last = i + 1
        elif c == ';':
            last = i + 1
sys.exit(bad)
PY
[ "$sec" = 0 ] && echo "ok - no file over 450 lines, no function of the scheduler or a job over 80"
[ "$sec" = 0 ] || bad=1
exit $bad
