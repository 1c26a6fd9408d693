#!/usr/bin/env bash
# Evaluations per minute of `kernelpro optimize` (issue 34), two or more binaries on the same kernels,
# alternating so that all see the same load: each search is given TIME seconds and a budget it
# cannot reach (it may still stop earlier: iterations, or nothing left to propose; the rate is
# evaluations over the run's whole wall time, the original's compile and baseline included).
# Usage: bash bench/evals_per_minute.sh BEFORE_BIN AFTER_BIN [EVALUATOR] [NAME=BIN ...] > table
#   EVALUATOR: gpu (default, on the GPU machine) or stub:1.5 (the CPU: compile-bound)
#   NAME=BIN: more binaries (e.g. main=.devbin/kernelpro-main), each run after BEFORE and AFTER.
#   TIME=60  ROUNDS=1  FILES="bench/kernels/softmax.cu:softmax_rows ..."  EXTRA="--devices 0"
#   ENERGY=1: energy measured as a user's search does (the default of `optimize`); otherwise
#   --no-energy, as the earlier tables.
#   KEEP=DIR keeps each run's --json output there (DIR/KERNEL.NAME.ROUND.json).
# Columns: evaluations, wall, the rate, the stop, and where the time went (the binary's `pipeline`
# field, when it has one: workers started, GPU jobs, seconds in GPU jobs, seconds the GPU lanes
# waited for compiles, jobs with an energy window, runs under the original launch, seconds in the
# proposers). Then per kernel each binary's rate over BEFORE's.
set -uo pipefail
cd "$(dirname "$0")/.."
# On the GPU machine: the CUTLASS headers from .devbin (bench/devbin.sh), when carried.
[ -f bench/devbin_env.sh ] && . bench/devbin_env.sh
BEFORE=${1:?usage: evals_per_minute.sh BEFORE_BIN AFTER_BIN [EVALUATOR] [NAME=BIN ...]}; AFTER=${2:?}; EVAL=${3:-gpu}
shift 2; [ $# -gt 0 ] && shift
BINS=("before=$BEFORE" "after=$AFTER" "$@")
TIME=${TIME:-60}
FILES=${FILES:-"bench/kernels/softmax.cu:softmax_rows bench/kernels/reduction.cu:reduce_sum bench/kernels/transpose.cu:transpose bench/kernels/matmul_naive.cu:matmul_naive"}
OUT=${KEEP:-$(mktemp -d)}; mkdir -p "$OUT"
ROWS=$OUT/rows.txt; : > "$ROWS"
echo "kernel binary evaluations wall_s evals_per_min stop workers gpu_jobs gpu_s compile_wait_s energy_windows old_launch_runs propose_s"
ENERGY_FLAG=--no-energy; [ "${ENERGY:-0}" = 1 ] && ENERGY_FLAG=
for round in $(seq "${ROUNDS:-1}"); do
  for fk in $FILES; do
    f=${fk%%:*}; k=${fk#*:}
    for nb in "${BINS[@]}"; do
      which=${nb%%=*}; bin=${nb#*=}
      s=$(date +%s.%N)
      # shellcheck disable=SC2086
      "$bin" optimize "$f" --kernel "$k" --budget 100000 --time "$TIME" --evaluator "$EVAL" $ENERGY_FLAG --no-profile ${EXTRA:-} --json > "$OUT/$k.$which.$round.json" 2> "$OUT/$k.$which.$round.err"
      e=$(date +%s.%N)
      python3 - "$OUT/$k.$which.$round.json" "$k" "$which" "$s" "$e" <<'PY' | tee -a "$ROWS"
import json, sys
path, k, which, s, e = sys.argv[1:]
wall = float(e) - float(s)
p = {}
try:
    d = json.load(open(path))
    n, stop = d["evaluations"], d["stop"].replace(" ", "_")
    p = d.get("pipeline") or {}
except Exception as x:
    n, stop = 0, f"no_result_({x.__class__.__name__})"
cols = [str(p.get(c, "-")) if not isinstance(p.get(c), float) else f"{p[c]:.1f}" for c in ("worker_starts", "gpu_jobs", "gpu_s", "compile_wait_s", "energy_windows", "old_launch_runs", "propose_s")]
print(f"{k} {which} {n} {wall:.1f} {60 * n / wall:.1f} {stop} " + " ".join(cols))
PY
    done
  done
done
echo
echo "kernel binary evals_per_min_over_before"
python3 - "$ROWS" <<'PY'
import sys, collections
rates = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5:
        rates[f[0]][f[1]].append(float(f[4]))
for k, by in rates.items():
    base = sum(by.get("before", [0])) / max(1, len(by.get("before", [])))
    for b, xs in by.items():
        if b != "before":
            mean = sum(xs) / len(xs)
            print(f"{k} {b} {mean / base:.2f}x" if base > 0 else f"{k} {b} n/a")
PY
