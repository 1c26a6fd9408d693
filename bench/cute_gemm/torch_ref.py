"""cuBLAS (torch.matmul) on the inputs harness.cu wrote: TFLOP/s, and the generated C against it."""
import sys

import numpy as np
import torch

prefix, n, b_col = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "col"
load = lambda name: torch.from_numpy(np.fromfile(f"{prefix}.{name}.bin", dtype=np.int16).reshape(n, n)).view(torch.bfloat16).cuda()
a, b, c = load("A"), load("B"), load("C")
if b_col:  # the file holds B column-major, i.e. B^T row-major
    b = b.t()
ref = torch.matmul(a, b)
for _ in range(3):
    torch.matmul(a, b)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
iters = 20
start.record()
for _ in range(iters):
    torch.matmul(a, b)
end.record()
torch.cuda.synchronize()
ms = start.elapsed_time(end) / iters
err = (c.float() - ref.float()).abs()
bad = (err > 1e-2 + 1e-2 * ref.float().abs()).sum().item()
print(f"torch.matmul (cuBLAS) bf16 n={n}: {ms:.3f} ms {2 * n**3 / ms / 1e9:.1f} TFLOP/s | generated vs cuBLAS: max abs err {err.max().item():.3g}, mismatches {bad}/{n * n}")
