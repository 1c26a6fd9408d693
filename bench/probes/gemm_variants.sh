#!/usr/bin/env bash
# Runs bench/probes/gemm_variants.cu (built beforehand into .devbin/gemm_variants:
#   nvcc -O3 -arch=sm_90 -cudart static -o .devbin/gemm_variants bench/probes/gemm_variants.cu)
# and torch.mm with TF32 off on the same GPU, for the ratio of each variant to cuBLAS.
# Usage (device): bash bench/probes/gemm_variants.sh [N]
set -uo pipefail
cd "$(dirname "$0")/../.."
N=${1:-4096}
nvidia-smi -L
python3 - "$N" <<'PY'
import sys, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
n = int(sys.argv[1])
a = torch.rand(n, n, device="cuda") * 2 - 1; b = torch.rand(n, n, device="cuda") * 2 - 1
for _ in range(5): torch.mm(a, b)
torch.cuda.synchronize(); ts = []
for _ in range(20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); torch.mm(a, b); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
ts.sort(); m = ts[len(ts) // 2]
print(f"{'torch.mm (cuBLAS, TF32 off)':34s} {m:8.3f} ms {2*n**3/m/1e6:8.0f} GFLOP/s")
PY
.devbin/gemm_variants "$N"
