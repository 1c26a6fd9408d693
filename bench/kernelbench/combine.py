#!/usr/bin/env python3
"""Issue 20's figures over several run.py result folders taken together (e.g. the naive corpus
and the KernelBench slice, measured in different calls): per folder and over all, the tasks, the
correct ones, the geomean speedup of the optimized kernel over the naive one, over PyTorch eager
and over torch.compile, and the share of all tasks correct and within 1.25x of eager's time.
A task measured in more than one folder counts once, from the last folder given.

Usage: python3 bench/kernelbench/combine.py DIR [DIR ...]"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import summarize  # noqa: E402  (run.py imports torch only when it measures)


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


def line(label, rows):
    s = summarize(rows, len(rows))
    f = lambda x: f"{x:.2f}x" if x else "–"
    within = round(s["within_1.25_of_eager"] * len(rows)) if rows else 0
    return (f"| {label} | {len(rows)} | {s['correct']} | {f(s['geomean_over_naive'])} | {f(s['geomean_over_eager'])} | "
            f"{f(s['geomean_over_compile'])} | {within} ({100 * within / max(len(rows), 1):.1f}%) |")


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
