#!/usr/bin/env bash
# MCTS vs greedy vs random at equal wall time (issue 34, item 3), on the GPU machine: `kernelpro
# optimize --strategy S --time TIME` (a budget it cannot reach, no profile, no energy) on each
# kernel, one search at a time, the strategies' order rotated from kernel to kernel so that none
# always runs first on a warm GPU; one raw JSON per run (RAW/STRATEGY/NAME.json, stderr beside it),
# then bench/strategies_table.py prints the markdown table for docs/benchmarks.md.
# Kernels (default): 8 naive corpus kernels of distinct classes from public-kernels/corpus/corpus.json
# (git-ignored, fetched: carry "public-kernels" to the device) and bench/kernels/*.cu.
# The whole run stays under CAP seconds (default 540: 9 minutes): a run that could not finish by
# then is not started, and the table says which were left out. Elapsed time printed per run.
# Expects the release binary in .devbin/ (bench/devbin.sh; carry [".devbin"]) or KERNELPRO_BIN.
# Usage: bash bench/strategies_gpu.sh [OUTDIR]   (OUTDIR defaults to $OUT, the device's return folder)
#   TIME=8 (seconds a search)  STRATS="mcts greedy random"  CORPUS=8 (corpus kernels; 0 for none)
#   FILES="bench/kernels/*.cu" (bench files; "" for none)  CAP=540  EXTRA="--seed 1"
#   EVALUATOR=gpu (stub:1.5 runs the script on a machine without a GPU, timings invented)
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f bench/devbin_env.sh ] && . bench/devbin_env.sh
BIN=${KERNELPRO_BIN:-kernelpro}
DEST=${1:-${OUT:?usage: strategies_gpu.sh OUTDIR}}
TIME=${TIME:-8}; STRATS=${STRATS:-"mcts greedy random"}; CAP=${CAP:-540}; CORPUS=${CORPUS:-8}
FILES=${FILES-bench/kernels/*.cu}
mkdir -p "$DEST/raw"
started=$(date +%s)

# NAME FILE KERNEL, one a line.
list=$(mktemp)
if [ "$CORPUS" -gt 0 ] && [ -f public-kernels/corpus/corpus.json ]; then
  python3 - "$CORPUS" >> "$list" <<'PY'
import json, sys
seen, n = set(), int(sys.argv[1])
for t in json.load(open("public-kernels/corpus/corpus.json")):
    if t.get("role") == "naive" and t["class"] not in seen and len(seen) < n:
        seen.add(t["class"])
        print(t["task"], t["file"], t["kernel"])
PY
elif [ "$CORPUS" -gt 0 ]; then
  echo "no public-kernels/corpus/corpus.json (carry public-kernels): bench kernels only"
fi
for f in $FILES; do
  echo "$(basename "$f" .cu) $f $(grep -o "__global__ void [A-Za-z_0-9]*" "$f" | head -1 | awk '{print $3}')" >> "$list"
done
read -ra strats <<< "$STRATS"
runs=$(( $(wc -l < "$list") * ${#strats[@]} ))
echo "$runs runs of ${TIME} s ($(wc -l < "$list") kernels x ${#strats[@]} strategies), cap ${CAP} s"

i=0
while read -r name file kernel; do
  # Rotate the strategies' order by the kernel's index.
  order=("${strats[@]:$((i % ${#strats[@]}))}" "${strats[@]:0:$((i % ${#strats[@]}))}")
  i=$((i + 1))
  for s in "${order[@]}"; do
    mkdir -p "$DEST/raw/$s"
    now=$(date +%s)
    # The search, its baseline and the binary's start: TIME plus a few seconds at most.
    if [ $((now - started + TIME + 8)) -gt "$CAP" ]; then
      echo "$name $s skipped: the ${CAP} s cap" | tee -a "$DEST/skipped.txt"
      continue
    fi
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    timeout $((TIME + 60)) "$BIN" optimize "$file" --kernel "$kernel" --strategy "$s" --budget 100000 \
      --time "$TIME" --evaluator "${EVALUATOR:-gpu}" --no-energy --no-profile ${EXTRA:-} --json > "$DEST/raw/$s/$name.json" 2> "$DEST/raw/$s/$name.err"
    rc=$?
    t1=$(date +%s.%N)
    python3 - "$DEST/raw/$s/$name.json" "$name" "$s" "$t0" "$t1" "$rc" "$started" <<'PY'
import json, sys, time
path, name, s, t0, t1, rc, started = sys.argv[1:]
took, total = float(t1) - float(t0), time.time() - float(started)
try:
    d = json.load(open(path))
    print(f"{name} {s}: {d.get('speedup') or 1.0:.2f}x, {d.get('evaluations')} evaluations, "
          f"{d.get('pruned_by_prior', 0)} points pruned, {took:.1f} s (elapsed {total:.0f} s)")
except Exception as e:
    print(f"{name} {s}: no result (rc {rc}, {e}), {took:.1f} s (elapsed {total:.0f} s)")
PY
  done
done < "$list"
rm -f "$list"
echo "elapsed $(( $(date +%s) - started )) s"
python3 bench/strategies_table.py "$DEST/raw" --time "$TIME" | tee "$DEST/table.md"
