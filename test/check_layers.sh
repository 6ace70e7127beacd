#!/usr/bin/env bash
# The layers of src/, as what each folder may include besides itself. The
# arrows all point down: pg/ is the C++/PostgreSQL boundary; partitions/
# reads bounds and DEFAULT, holds the key space and names, and builds and
# runs LIKE + ATTACH; registry/ is what partheal knows of a managed table;
# worker/ holds the shared-memory protocols, the launcher and the worker's
# loop; heal/, ahead/, manage/ and attach/ are the capabilities, none of
# which includes another; append/ (partheal_append, partheal_reserve) puts
# the heal loop and the worker's heal requests together, as drain/ (the
# worker's drain of DEFAULT) puts attach's reconcile and the worker's
# transactions together; gate/ (the insert gate under plain INSERTs) puts
# the heal loop and append's way of making a partition under the executor;
# partheal.cpp wires
# the rest at _PG_init. A header named *_internal.hpp is for its own folder
# only. errors.hpp and settings.hpp at the top of src/ are plain
# definitions (SQLSTATEs, GUC values) that every folder may include.
# Prints each include that breaks this, and exits 1 if any does.
set -euo pipefail
cd "$(dirname "$0")/../src"
declare -A may=(
  [pg]=""
  [partitions]="pg"
  [registry]="pg partitions"
  [worker]="pg partitions registry"
  [heal]="pg partitions registry"
  [ahead]="pg partitions registry worker"
  [manage]="pg partitions registry worker"
  [attach]="pg partitions registry"
  [append]="pg partitions registry worker heal ahead"
  [drain]="pg partitions registry worker attach"
  [retention]="pg partitions registry worker attach"
  [gate]="pg partitions registry worker heal append"
  [.]="pg partitions registry worker heal ahead manage attach append drain retention gate"
)
bad=0
for f in *.cpp */*.cpp */*.hpp; do
  dir=$(dirname "$f")
  if [ -z "${may[$dir]+set}" ]; then echo "$f: folder $dir/ has no place in test/check_layers.sh"; bad=1; continue; fi
  while read -r inc; do
    to=${inc%%/*}
    [ "$to" = "$dir" ] && continue
    [ -z "${may[$to]+set}" ] && continue  # a PostgreSQL header (utils/, access/, ...)
    if [[ "$inc" == *_internal.hpp ]]; then
      echo "$f includes $inc, which is internal to $to/"; bad=1
    elif [[ " ${may[$dir]} " != *" $to "* ]]; then
      echo "$f: $dir/ may not include $inc (it may include: ${may[$dir]:-nothing outside pg/})"; bad=1
    fi
  done < <(sed -n 's/^#include "\([a-z_]*\/[a-z_]*\.hpp\)".*/\1/p' "$f")
done
[ "$bad" = 0 ] && echo "ok - every include in src/ points down its layers"
exit $bad
