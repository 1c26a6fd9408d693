#!/usr/bin/env bash
# MCTS vs greedy vs random at equal wall time (issue 34): every strategy searches each file for
# TIME seconds with a budget it cannot reach, one search at a time on the same GPU, from the same
# binary; then bench/compare_strategies.py tabulates the speedups (evaluations in brackets), the
# geomeans and each strategy's gain over the last one named.
# Usage: bash bench/strategies_equal_time.sh BIN OUTDIR   (TIME=45 STRATS="mcts random greedy"
#        FILES="bench/kernels/*.cu" EVALUATOR=gpu EXTRA="--devices 0")
# Writes OUTDIR/STRATEGY/opt/FILE.json (compare_strategies.py's layout) and OUTDIR/compare.md.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f bench/devbin_env.sh ] && . bench/devbin_env.sh
BIN=${1:?usage: strategies_equal_time.sh BIN OUTDIR}; DEST=${2:?}
TIME=${TIME:-45}; STRATS=${STRATS:-"mcts random greedy"}; EVAL=${EVALUATOR:-gpu}
mkdir -p "$DEST"
for f in ${FILES:-bench/kernels/*.cu}; do
  k=$(grep -o "__global__ void [A-Za-z_0-9]*" "$f" | head -1 | awk '{print $3}')
  name=$(basename "$f" .cu)
  for s in $STRATS; do
    mkdir -p "$DEST/$s/opt"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$BIN" optimize "$f" --kernel "$k" --strategy "$s" --budget 100000 --time "$TIME" --evaluator "$EVAL" \
      --no-energy --no-profile ${EXTRA:-} --json > "$DEST/$s/opt/$name.json" 2> "$DEST/$s/$name.err"
    end=$(date +%s.%N)
    python3 -c "
import json,sys
try:
    d=json.load(open('$DEST/$s/opt/$name.json')); print('$name $s', f\"{d['speedup']:.2f}x\", d['evaluations'], 'evals', f'{float(\"$end\")-float(\"$start\"):.1f} s')
except Exception as e: print('$name $s no result', e)"
  done
done
names=$(echo $STRATS | tr ' ' ',')
dirs=""; for s in $STRATS; do dirs="$dirs $DEST/$s"; done
# shellcheck disable=SC2086
python3 bench/compare_strategies.py $dirs --names="$names" | tee "$DEST/compare.md"
