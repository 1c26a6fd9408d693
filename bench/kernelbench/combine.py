#!/usr/bin/env python3
"""Issue 20's figures over several run.py result folders taken together (e.g. the naive corpus
and the KernelBench slice, measured in different calls): per folder and over all, the tasks, the
correct ones, the geomean speedup of the optimized kernel over the naive one, over PyTorch eager
and over torch.compile, and the share of all tasks correct and within 1.25x of eager's time.
A task measured in more than one folder counts once, from the last folder given.

Usage: python3 bench/kernelbench/combine.py DIR [DIR ...]"""
import json
import math
import os
import sys


def load(d):
    """results.jsonl, or where a folder kept none, its tasks/*/result.json."""
    path = os.path.join(d, "results.jsonl")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return {r["task"]: r for r in map(json.loads, f)}
    rows = {}
    tasks = os.path.join(d, "tasks")
    for t in sorted(os.listdir(tasks)):
        p = os.path.join(tasks, t, "result.json")
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                r = json.load(f)
            rows[r["task"]] = r
    return rows


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def line(label, rows):
    ok = [r for r in rows if r.get("correct") and "error" not in r]
    g = lambda k: geomean([r.get(k) for r in ok])
    within = sum(1 for r in ok if (r.get("speedup_over_eager") or 0) >= 0.8)
    f = lambda x: f"{x:.2f}x" if x else "–"
    return (f"| {label} | {len(rows)} | {len(ok)} | {f(g('speedup_over_naive'))} | {f(g('speedup_over_eager'))} | "
            f"{f(g('speedup_over_compile'))} | {within} ({100 * within / len(rows):.1f}%) |")


def main(dirs):
    if not dirs:
        raise SystemExit(__doc__)
    merged = {}
    print("| results | tasks | correct | geomean vs naive | vs eager | vs torch.compile | within 1.25x of eager |")
    print("|---|---|---|---|---|---|---|")
    for d in dirs:
        rows = load(d)
        merged.update(rows)
        print(line(os.path.basename(os.path.normpath(d)), list(rows.values())))
    print(line("all of them", list(merged.values())))


if __name__ == "__main__":
    main(sys.argv[1:])
