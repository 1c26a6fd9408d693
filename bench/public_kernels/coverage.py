#!/usr/bin/env python3
"""Which rewrites the optimizer would try first on each task file, without a GPU: a search with
the stub evaluator (`kernelpro optimize --evaluator stub:1`) and a small budget lists its
candidates in order (structural rewrites first). One line per task: the task, its class, the
distinct rewrites tried, and whether any structural one was among them.

Usage: python3 bench/public_kernels/coverage.py [--budget N] DIR_OR_FILE...
  (e.g. public-kernels/llmc public-kernels/leetcuda bench/kernelbench/tasks)
Needs target/debug/kernelpro (or KERNELPRO_BIN) and nvcc (KERNELPRO_NVCC or the project's .venv).
"""
import json
import os
import re
import subprocess
import sys

# Rewrites that change how work maps to threads (the structural tier, and the older rewrites that
# restructure: a coarsened reduction, a warp per row, privatized atomics, shared tiles, CuTe GEMM).
STRUCTURAL = {"WarpUnits", "BlockUnits", "ClusterUnits", "WarpScan", "ColumnUnits", "TiledContraction", "BlockReduce",
              "PrivateHistogram", "SegmentWarps", "ShuffleTree", "StencilTile", "WindowTile", "BlockScan", "HoistRowWork", "TiledTranspose", "GridStrideMap", "CuteGemm",
              "CoarsenReduce", "WarpRows", "PrivatizeAtomics", "SharedTiling"}


def tasks(paths):
    for p in paths:
        if os.path.isdir(p):
            yield from sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".cu"))
        else:
            yield p


def main():
    args = sys.argv[1:]
    budget = 8
    if args[:1] == ["--budget"]:
        budget, args = int(args[1]), args[2:]
    if not args:
        raise SystemExit(__doc__)
    binary = os.environ.get("KERNELPRO_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "target", "debug", "kernelpro"))
    covered = total = 0
    for path in tasks(args):
        text = open(path, encoding="utf-8").read()
        kernel = re.search(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)", text).group(1)
        klass = (re.search(r"^// class: (\S+)", text, re.M) or [None, "?"])[1]
        out = subprocess.run([binary, "optimize", "--kernel", kernel, "--evaluator", "stub:1", "--budget", str(budget),
                              "--no-profile", "--json", path], capture_output=True, text=True)
        total += 1
        try:
            tried = [t["recipe"] for t in json.loads(out.stdout)["tried"][1:]]
        except (ValueError, KeyError):
            print(f"{os.path.basename(path)}\t{klass}\terror: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
            continue
        distinct = list(dict.fromkeys(tried))
        structural = [r for r in distinct if r in STRUCTURAL]
        covered += bool(structural)
        print(f"{os.path.basename(path)}\t{klass}\t{'structural' if structural else 'micro only'}\t{', '.join(distinct)}")
    print(f"# {covered} of {total} tasks get a structural rewrite among their first {budget} candidates")


if __name__ == "__main__":
    main()
