#!/usr/bin/env bash
# Runs bench/probes/map_variants.cu (built beforehand into .devbin/map_variants:
#   nvcc -O3 -arch=sm_90 -cudart static -o .devbin/map_variants bench/probes/map_variants.cu)
# beside torch.relu and torch's copy_ on the same GPU and the same sizes, each timed after an L2 flush.
# Usage (device): bash bench/probes/map_variants.sh [N]
set -uo pipefail
cd "$(dirname "$0")/../.."
N=${1:-67108864}
nvidia-smi -L
python3 - "$N" <<'PY'
import sys, torch
sys.path.insert(0, "bench/probes")
from torch_timing import flushed_median_ms as med
n = int(sys.argv[1])
x = torch.rand(n, device="cuda") * 2 - 1; y = torch.empty_like(x)
for name, f in [("torch.relu", lambda: torch.relu(x)),
                ("torch copy_", lambda: y.copy_(x)),
                ("torch.compile relu", torch.compile(lambda: torch.relu(x)))]:
    f(); m = med(f)
    print(f"{name:36s} {m:8.4f} ms {2*4*n/m/1e6:6.0f} GB/s")
PY
.devbin/map_variants "$N"
