#!/usr/bin/env bash
# Runs bench/probes/column_variants.cu (built beforehand into .devbin/column_variants:
#   nvcc -O3 -arch=sm_90 -cudart static -o .devbin/column_variants bench/probes/column_variants.cu)
# beside torch.sum over the same axis, each timed after an L2 flush.
# Usage (device): bash bench/probes/column_variants.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
python3 - <<'PY'
import torch
x = torch.rand(4, 4096, 4095, device="cuda")
flush = torch.empty(256 << 18, dtype=torch.int32, device="cuda")
def med(f):
    ts = []
    for r in range(23):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); torch.cuda.synchronize()
        if r >= 3: ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts) // 2]
for name, f in [("torch.sum(dim=1)", lambda: torch.sum(x, dim=1)), ("torch.compile sum", torch.compile(lambda: torch.sum(x, dim=1)))]:
    f(); m = med(f)
    print(f"{name:38s} {m:8.4f} ms {4*x.numel()/m/1e6:6.0f} GB/s")
PY
.devbin/column_variants
