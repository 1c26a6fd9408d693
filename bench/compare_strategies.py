#!/usr/bin/env python3
"""MCTS against greedy (or any two strategies) on the same files at the same budget, from two
corpus_gpu.sh tarballs (`STRATEGY=mcts` and `STRATEGY=greedy` runs): per file the speedup each
reached over the naive kernel, and over all files the geometric means and MCTS's gain
((geomean_a - 1) / (geomean_b - 1), the figure issue 20 asks to be >= 1.25).

Usage: python3 bench/compare_strategies.py A.tgz B.tgz [--names mcts,greedy]
"""
import io
import json
import math
import sys
import tarfile


def speedups(path):
    out = {}
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            name = m.name.lstrip("./")
            if not (name.startswith("opt/") and name.endswith(".json")):
                continue
            try:
                j = json.load(io.TextIOWrapper(tar.extractfile(m), encoding="utf-8"))
            except (ValueError, AttributeError):
                continue
            out[name[4:-5]] = (j.get("speedup") or 1.0, j.get("evaluations"),
                               ", ".join(s.get("recipe", "?") for s in j.get("steps", [])) or "none")
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--names")]
    names = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--names=")), "a,b").split(",")
    if len(args) != 2:
        raise SystemExit(__doc__)
    a, b = speedups(args[0]), speedups(args[1])
    common = sorted(set(a) & set(b))
    print(f"| file | {names[0]} | {names[1]} | {names[0]} path | {names[1]} path |")
    print("|---|---|---|---|---|")
    for f in common:
        print(f"| {f} | {a[f][0]:.2f}x ({a[f][1]}) | {b[f][0]:.2f}x ({b[f][1]}) | {a[f][2]} | {b[f][2]} |")
    if not common:
        return
    ga = math.exp(sum(math.log(a[f][0]) for f in common) / len(common))
    gb = math.exp(sum(math.log(b[f][0]) for f in common) / len(common))
    wins = sum(1 for f in common if a[f][0] > b[f][0] * 1.02)
    losses = sum(1 for f in common if b[f][0] > a[f][0] * 1.02)
    gain = (ga - 1) / (gb - 1) if gb > 1 else float("inf")
    print(f"\n{len(common)} files: geomean {names[0]} {ga:.2f}x, {names[1]} {gb:.2f}x; "
          f"{names[0]}'s gain over {names[1]} {gain:.2f}x; {names[0]} ahead by >2% on {wins}, behind on {losses}")


if __name__ == "__main__":
    main()
