#!/usr/bin/env python3
"""Search strategies compared on the same files at the same budget: per file the speedup each
reached over the naive kernel (evaluations in brackets), and over all files the geometric means
and each strategy's gain over the last one ((geomean_a - 1) / (geomean_b - 1), the figure issue
20 asks to be >= 1.25 for MCTS over greedy).

Each input is one strategy's run: a corpus_gpu.sh tarball (opt/NAME.json), a run.py output
directory or tarball (tasks/NAME/optimize.json), or a folder of task folders (NAME/optimize.json).

Usage: python3 bench/compare_strategies.py A B [C ...] [--names=mcts,greedy,random]
"""
import io
import json
import math
import os
import sys
import tarfile


def outcome(j):
    return (j.get("speedup") or 1.0, j.get("evaluations"),
            ", ".join(s.get("recipe", "?") for s in j.get("steps", [])) or "none")


def name_of(path):
    """The file or task name of an outcome file, or None when the path is not one."""
    path = path.lstrip("./")
    if path.startswith("opt/") and path.endswith(".json"):
        return path[4:-5]
    parts = path.split("/")
    if len(parts) >= 3 and parts[-3] == "tasks" and parts[-1] == "optimize.json":
        return parts[-2]
    return None


def speedups(path):
    return {name: outcome(j) for name, j in outcomes(path).items()}


def outcomes(path):
    """Each file's or task's optimize.json of one run, by name."""
    out = {}
    if os.path.isdir(path) and not any(os.path.isdir(os.path.join(path, s)) for s in ("opt", "tasks")):
        # A folder of task folders (TASK/optimize.json).
        for entry in sorted(os.listdir(path)):
            full = os.path.join(path, entry, "optimize.json")
            if os.path.isfile(full):
                with open(full, encoding="utf-8") as fh:
                    out[entry] = json.load(fh)
        return out
    if os.path.isdir(path):
        # Only this run's own outcome files: a results folder may hold other runs below it.
        for sub in ("opt", "tasks"):
            top = os.path.join(path, sub)
            for entry in sorted(os.listdir(top)) if os.path.isdir(top) else []:
                full = os.path.join(top, entry, "optimize.json") if sub == "tasks" else os.path.join(top, entry)
                name = name_of(os.path.relpath(full, path))
                if name and os.path.isfile(full):
                    with open(full, encoding="utf-8") as fh:
                        out[name] = json.load(fh)
        return out
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            name = name_of(m.name)
            if not name:
                continue
            try:
                out[name] = json.load(io.TextIOWrapper(tar.extractfile(m), encoding="utf-8"))
            except (ValueError, AttributeError):
                continue
    return out


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--names")]
    given = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--names=")), "")
    names = given.split(",") if given else [chr(ord("a") + i) for i in range(len(args))]
    if len(args) < 2 or len(names) != len(args):
        raise SystemExit(__doc__)
    runs = [speedups(a) for a in args]
    common = sorted(set.intersection(*(set(r) for r in runs)))
    print("| file | " + " | ".join(names) + " | " + " | ".join(f"{n} path" for n in names) + " |")
    print("|---" * (1 + 2 * len(names)) + "|")
    for f in common:
        cells = [f"{r[f][0]:.2f}x ({r[f][1]})" for r in runs] + [r[f][2] for r in runs]
        print(f"| {f} | " + " | ".join(cells) + " |")
    if not common:
        return
    g = [geomean([r[f][0] for f in common]) for r in runs]
    print(f"\n{len(common)} files: geomean " + ", ".join(f"{n} {x:.2f}x" for n, x in zip(names, g)))
    base, gb = names[-1], g[-1]
    for i, n in enumerate(names[:-1]):
        a, b = runs[i], runs[-1]
        gain = (g[i] - 1) / (gb - 1) if gb > 1 else float("inf")
        wins = sum(1 for f in common if a[f][0] > b[f][0] * 1.02)
        losses = sum(1 for f in common if b[f][0] > a[f][0] * 1.02)
        print(f"{n}'s gain over {base} {gain:.2f}x; {n} ahead by >2% on {wins} files, behind on {losses}")
    evals = [sum(r[f][1] or 0 for f in common) / len(common) for r in runs]
    print("mean evaluations per file: " + ", ".join(f"{n} {e:.1f}" for n, e in zip(names, evals)))


if __name__ == "__main__":
    main()
