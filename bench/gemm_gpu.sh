#!/usr/bin/env bash
# fp32 GEMM on the GPU, issue 34 item 4: the naive kernel, TiledContraction's forms of it
# (bench/kernels/gemm/, the generator's output: the four SIMT GEMM forms and the 64x64 form, each
# under its own launch) and torch.mm (cuBLAS, TF32 off) for N = 1024, 2048, 4096. Prints per size
# and kernel the median time, GFLOP/s and the ratio to cuBLAS; each form runs with the naive kernel
# as its reference on the same inputs (`kernelpro run --reference`) and must match it exactly
# (check rtol=0 atol=0: the same products in the same order per output).
# Expects the release binary in .devbin/ (bench/devbin.sh; carry [".devbin"]) or KERNELPRO_BIN, and
# python3 with torch. About 2 minutes of device time.
# Usage: bash bench/gemm_gpu.sh [SIZES]   (default "1024 2048 4096")
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/devbin_env.sh
KP=${KERNELPRO_BIN:-kernelpro}
SIZES=${1:-1024 2048 4096}
WORK=$(mktemp -d)
FORMS="simt_128x128 simt_128x128_2blocks simt_128x64 simt_64x128 tiled_64x64"
status=0

python3 - $SIZES > "$WORK/torch.txt" <<'PY' || { echo "torch timing failed"; status=1; }
import sys, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
for n in map(int, sys.argv[1:]):
    a = torch.rand(n, n, device="cuda") * 2 - 1
    b = torch.rand(n, n, device="cuda") * 2 - 1
    for _ in range(5):
        torch.mm(a, b)
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); torch.mm(a, b); e.record(); torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    print(n, times[len(times) // 2])
PY

for N in $SIZES; do
  for f in naive $FORMS; do
    sed -e "s|^// kernelpro: let N = .*|// kernelpro: let N = $N|" -e "s|check rtol=1e-5 atol=1e-5|check rtol=0 atol=0|" \
      "bench/kernels/gemm/$f.cu" > "$WORK/$N-$f.cu"
  done
  runs=20; [ "$N" -ge 4096 ] && runs=5
  "$KP" run "$WORK/$N-naive.cu" --kernel sgemm_naive --runs "$runs" --json --no-energy > "$WORK/$N-naive.json" 2> "$WORK/$N-naive.err" || status=1
  for f in $FORMS; do
    "$KP" run "$WORK/$N-$f.cu" --kernel sgemm_naive --reference "$WORK/$N-naive.cu:sgemm_naive" --runs 20 --json --no-energy \
      > "$WORK/$N-$f.json" 2> "$WORK/$N-$f.err" || status=1
  done
done

python3 - "$WORK" "$FORMS" $SIZES <<'PY'
import json, os, sys
work, forms, sizes = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
torch_ms = dict(l.split() for l in open(os.path.join(work, "torch.txt")) if l.strip())
print("| N | kernel | median ms | GFLOP/s | vs cuBLAS (torch.mm, TF32 off) | outputs vs naive |")
print("|---|---|---|---|---|---|")
for n in sizes:
    flop = 2.0 * int(n) ** 3
    cublas = float(torch_ms[n]) if n in torch_ms else None
    def row(name, ms, check):
        gf = flop / (ms * 1e6)
        ratio = f"{cublas / ms:.2f}" if cublas else "–"
        print(f"| {n} | {name} | {ms:.3f} | {gf:.0f} | {ratio} | {check} |")
    if cublas:
        row("torch.mm (cuBLAS)", cublas, "–")
    for name in ["naive"] + forms:
        path = os.path.join(work, f"{n}-{name}.json")
        try:
            j = json.load(open(path))
        except Exception:
            err = open(path[:-5] + ".err").read().strip().splitlines()
            print(f"| {n} | {name} | – | – | – | failed: {err[-1][:150] if err else 'no output'} |")
            continue
        if "kernel" not in j:
            print(f"| {n} | {name} | – | – | – | failed: {str(j)[:150]} |")
            continue
        c = j.get("comparison") or []
        check = "–" if not c else ("equal" if all(x["bad"] == 0 for x in c) else f"{c[0]['bad']} of {c[0]['count']} differ")
        row(name, j["kernel"]["timing"]["median_ms"], check)
PY
exit $status
