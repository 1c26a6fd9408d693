#!/usr/bin/env bash
# Runs bench/probes/column_variants.cu (built beforehand into .devbin/column_variants:
#   nvcc -O3 -arch=sm_90 -cudart static -o .devbin/column_variants bench/probes/column_variants.cu)
# beside torch.sum over the same axis, each timed after an L2 flush.
# Usage (device): bash bench/probes/column_variants.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
python3 - <<'PY'
import sys, torch
sys.path.insert(0, "bench/probes")
from torch_timing import flushed_median_ms as med
x = torch.rand(4, 4096, 4095, device="cuda")
for name, f in [("torch.sum(dim=1)", lambda: torch.sum(x, dim=1)), ("torch.compile sum", torch.compile(lambda: torch.sum(x, dim=1)))]:
    f(); m = med(f)
    print(f"{name:38s} {m:8.4f} ms {4*x.numel()/m/1e6:6.0f} GB/s")
PY
.devbin/column_variants
