#!/usr/bin/env bash
# Evaluations per minute of `kernelpro optimize` (issue 34), two binaries on the same kernels,
# alternating so that both see the same load: each search is given TIME seconds and a budget it
# cannot reach (it may still stop earlier: iterations, or nothing left to propose; the rate is
# evaluations over the run's whole wall time, the original's compile and baseline included).
# Usage: bash bench/evals_per_minute.sh BEFORE_BIN AFTER_BIN [EVALUATOR] > table
#   EVALUATOR: gpu (default, on the GPU machine) or stub:1.5 (the CPU: compile-bound)
#   TIME=60  ROUNDS=1  FILES="bench/kernels/softmax.cu:softmax_rows ..."  EXTRA="--devices 0"
set -uo pipefail
cd "$(dirname "$0")/.."
# On the GPU machine: the CUTLASS headers from .devbin (bench/devbin.sh), when carried.
[ -f bench/devbin_env.sh ] && . bench/devbin_env.sh
BEFORE=${1:?usage: evals_per_minute.sh BEFORE_BIN AFTER_BIN [EVALUATOR]}; AFTER=${2:?}; EVAL=${3:-gpu}
TIME=${TIME:-60}
FILES=${FILES:-"bench/kernels/softmax.cu:softmax_rows bench/kernels/reduction.cu:reduce_sum bench/kernels/transpose.cu:transpose bench/kernels/matmul_naive.cu:matmul_naive"}
OUT=$(mktemp -d)
echo "kernel binary evaluations wall_s evals_per_min stop"
for round in $(seq "${ROUNDS:-1}"); do
  for fk in $FILES; do
    f=${fk%%:*}; k=${fk#*:}
    for which in before after; do
      bin=$BEFORE; [ "$which" = after ] && bin=$AFTER
      s=$(date +%s.%N)
      # shellcheck disable=SC2086
      "$bin" optimize "$f" --kernel "$k" --budget 100000 --time "$TIME" --evaluator "$EVAL" --no-energy --no-profile ${EXTRA:-} --json > "$OUT/$k.$which.$round.json" 2> "$OUT/$k.$which.$round.err"
      e=$(date +%s.%N)
      python3 - "$OUT/$k.$which.$round.json" "$k" "$which" "$s" "$e" <<'PY'
import json, sys
path, k, which, s, e = sys.argv[1:]
wall = float(e) - float(s)
try:
    d = json.load(open(path))
    n, stop = d["evaluations"], d["stop"]
except Exception as x:
    n, stop = 0, f"no result ({x.__class__.__name__})"
print(f"{k} {which} {n} {wall:.1f} {60 * n / wall:.1f} {stop}")
PY
    done
  done
done
