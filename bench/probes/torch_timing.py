"""PyTorch's side of the bandwidth probes (map_variants.sh, column_variants.sh): the median ms of a
call after an L2 flush, timed as flushed_timing.cuh times the probes' kernels (3 warm-ups, 20 runs)."""
import torch

_flush = None


def flushed_median_ms(f):
    global _flush
    if _flush is None:
        _flush = torch.empty(256 << 18, dtype=torch.int32, device="cuda")
    ts = []
    for r in range(23):
        _flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        f()
        e.record()
        torch.cuda.synchronize()
        if r >= 3:
            ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]
