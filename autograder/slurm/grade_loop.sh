#!/bin/bash
# Grade a whole class on a few machines without a scheduler: one shard per host over ssh, then merge.
#
#   autograder/slurm/grade_loop.sh SUBMISSIONS host1 host2 host3
#
# Every host must see this checkout (with .venv/ built) and SUBMISSIONS at the same path (a shared
# filesystem, or rsync them first). Shard K of N runs on the K-th host; all use one seed. Outputs: per shard
# build/shards/K-of-N/, then build/grades.csv and build/nbgrader/gradebook.db from `merge`. Re-running the
# script after a host failed grades only what that shard is missing (then merges again: idempotent).
# WORKERS (default 2) submissions in parallel per host; SEED defaults to one drawn now; GRADE_ARGS passes
# extra flags (e.g. "--lab lab02"). Locally, `HOSTS=local` style testing: use "localhost" as every host.
set -euo pipefail
SUBMISSIONS=${1:?usage: grade_loop.sh SUBMISSIONS host [host...]}
shift
HOSTS=("$@")
N=${#HOSTS[@]}
(( N > 0 )) || { echo "grade_loop.sh: name at least one host" >&2; exit 2; }
SEED=${SEED:-$RANDOM}
WORKERS=${WORKERS:-2}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$ROOT/build/slurm"
"$ROOT/.venv/bin/python" -m autograder release     # once, before any shard reads the release
pids=()
for K in "${!HOSTS[@]}"; do
    cmd="cd '$ROOT' && .venv/bin/python -m autograder grade '$SUBMISSIONS' --shard $K/$N --seed $SEED --workers $WORKERS ${GRADE_ARGS:-}"
    log="$ROOT/build/slurm/shard-$K-of-$N.log"
    if [[ ${HOSTS[$K]} == localhost ]]; then bash -c "$cmd" >"$log" 2>&1 &
    else ssh "${HOSTS[$K]}" "$cmd" >"$log" 2>&1 &
    fi
    pids+=($!)
    echo "shard $K/$N on ${HOSTS[$K]} (pid $!, log $log)"
done
failed=0
for K in "${!pids[@]}"; do wait "${pids[$K]}" || { echo "shard $K/$N failed: see its log" >&2; failed=1; }; done
shards=()
for K in "${!HOSTS[@]}"; do shards+=("$ROOT/build/shards/$K-of-$N"); done
"$ROOT/.venv/bin/python" -m autograder --root "$ROOT" merge "${shards[@]}"
echo "seed $SEED; merged into $ROOT/build/grades.csv"
exit $failed
