#!/usr/bin/env bash
# The optimizer on the naive-kernel corpus (tests/fixtures/naive, issue 20): `kernelpro optimize`
# with built-in recipes only on every naive file (not clean_/expert_), and per file the naive
# and best times, the speedup, the evaluations and the best path; the geomean at the end. For each
# class's primary naive file (★ in the corpus README) the expert version's time on the same
# inputs too, so the table says how far the optimizer got towards it.
# Expects the release binary in .devbin/ (bench/devbin.sh; carry [".devbin"]) or KERNELPRO_BIN.
# Usage: bash bench/corpus_gpu.sh OUTDIR
#   BUDGET=30 (evaluations per file)  TIME=300 (seconds per file)  JOBS=1 (searches at a time)
#   STRATEGY=mcts (or greedy, random: the same budget, for the comparison issue 20 asks for)  CLASSES="sum histogram" (default all)
#   PROFILE=1 (profile the original with ncu first; default off: the recipes follow the static findings)
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/devbin_env.sh
DEST=${1:?usage: corpus_gpu.sh OUTDIR}; mkdir -p "$DEST"
OUT=$(mktemp -d); mkdir -p "$OUT/opt" "$OUT/best"
# The device tool returns few files: everything goes into one tarball, the table is printed.
summary() {
python3 - "$OUT" <<'PY'
import json, math, os, sys
d = sys.argv[1]
rows, logs = [], []
expert = {}
for l in open(os.path.join(d, "expert_ms.txt")) if os.path.exists(os.path.join(d, "expert_ms.txt")) else []:
    c, f, ms = l.split()
    expert.setdefault(c, []).append((f, ms))
for name in sorted(os.listdir(os.path.join(d, "opt"))):
    if not name.endswith(".json"):
        continue
    try:
        j = json.load(open(os.path.join(d, "opt", name)))
    except Exception:
        err = open(os.path.join(d, "opt", name[:-5] + ".err")).read().strip().splitlines()
        rows.append(f"| {name[:-5]} | – | – | – | – | {err[-1][:120] if err else 'no outcome'} |")
        continue
    s = j.get("speedup") or 1.0
    logs.append(math.log(s))
    steps = ", ".join(x.get("recipe", "?") for x in j.get("steps", [])) or "none"
    ms = lambda k: f"{j[k]:.3f}" if j.get(k) is not None else "–"
    rows.append(f"| {name[:-5]} | {ms('original_ms')} | {ms('best_ms')} | {s:.2f}x | {j.get('evaluations')} ({j.get('stop', '')}) | {steps} |")
print("| class/file | naive ms | best ms | speedup | evaluations (stop) | best path |")
print("|---|---|---|---|---|---|")
print("\n".join(rows))
if logs:
    g = math.exp(sum(logs) / len(logs))
    print(f"\ngeomean over the naive kernels: {g:.2f}x over {len(logs)} files; {sum(1 for x in logs if x > math.log(1.05))} faster by more than 5%")
if expert:
    print("\n| class | clean/expert file | ms (on the inputs of the class's primary naive file, ★ in the corpus README) |\n|---|---|---|")
    for c in sorted(expert):
        for f, ms in expert[c]:
            print(f"| {c} | {f} | {ms} |")
PY
}
trap 'summary > "$OUT/corpus_summary.md"; tar czf "$DEST/corpus.tgz" -C "$OUT" . ; cat "$OUT/corpus_summary.md"' EXIT
trap 'kill $(jobs -p) 2>/dev/null; exit 143' TERM
B=${KERNELPRO_BIN:-$PWD/.devbin/kernelpro}
[ -x "$B" ] || B=$PWD/target/release/kernelpro
BUDGET=${BUDGET:-30}; TIME=${TIME:-300}
prof="--no-profile"; [ "${PROFILE:-0}" = 1 ] && prof=""
# EVALUATOR=stub:2 tries the flow without a GPU.
ev="--evaluator ${EVALUATOR:-gpu}"
JOBS=${JOBS:-1}
for dir in tests/fixtures/naive/*/; do
  c=$(basename "$dir")
  [ -n "${CLASSES:-}" ] && [[ " $CLASSES " != *" $c "* ]] && continue
  for f in "$dir"*.cu; do
    b=$(basename "$f" .cu)
    case "$b" in clean_*|expert_*) continue ;; esac
    k=$(grep -o "__global__ void [A-Za-z_0-9]*" "$f" | head -1 | awk '{print $3}')
    echo "== $c/$b ($k)" >&2
    # JOBS searches at a time: their compiles overlap, their GPU work takes turns (kernelpro's device lock).
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    timeout $((TIME + 60)) "$B" optimize "$f" --kernel "$k" --budget "$BUDGET" --time "$TIME" --strategy "${STRATEGY:-mcts}" --no-energy $prof $ev --json \
      --out "$OUT/best/${c}_$b.cu" > "$OUT/opt/${c}_$b.json" 2> "$OUT/opt/${c}_$b.err" &
  done
done
wait
for dir in tests/fixtures/naive/*/; do
  c=$(basename "$dir")
  [ -n "${CLASSES:-}" ] && [[ " $CLASSES " != *" $c "* ]] && continue
  # The class's clean and expert versions on the primary naive file's inputs.
  for e in "$dir"clean_*.cu "$dir"expert_*.cu; do
    [ -f "$e" ] || continue
    k=$(grep -o "__global__ void [A-Za-z_0-9]*" "$e" | head -1 | awk '{print $3}')
    ms=$("$B" run "$e" --kernel "$k" --no-energy --json 2>/dev/null | python3 -c "import json,sys;print(json.load(sys.stdin)['kernel']['timing']['median_ms'])" 2>/dev/null || echo n/a)
    echo "$c $(basename "$e" .cu) $ms" >> "$OUT/expert_ms.txt"
  done
done
