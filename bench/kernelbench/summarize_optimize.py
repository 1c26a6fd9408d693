#!/usr/bin/env python3
"""The optimizer's own outcome per task (speedup over the naive kernel in kernelpro's harness,
evaluations, the best path) from a run.py output directory's tasks/*/optimize.json, as a
markdown table with the geomean. Usage: summarize_optimize.py DIR"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from compare_strategies import outcomes  # noqa: E402  (the one reader of optimize.json files)


def order(name):
    head = name.split("_")[0]
    return (int(head) if head.isdigit() else 999, name)


def main(d):
    found = outcomes(d)
    tasks = os.path.join(d, "tasks") if os.path.isdir(os.path.join(d, "tasks")) else d
    names = set(found) | {n for n in os.listdir(tasks) if os.path.isdir(os.path.join(tasks, n))}
    rows, logs = [], []
    for name in sorted(names, key=order):
        j = found.get(name)
        if j is None:
            rows.append(f"| {name} | – | – | – | no optimizer outcome |")
            continue
        s = j.get("speedup") or 1.0
        logs.append(math.log(s))
        steps = ", ".join(x["recipe"] for x in j.get("steps", [])) or "none"
        ms = lambda k: f"{j[k]:.3f}" if j.get(k) is not None else "–"
        rows.append(f"| {name} | {ms('original_ms')} | {ms('best_ms')} | {s:.2f}x | {j.get('evaluations')} ({j.get('stop', '')}) | {steps} |")
    print("| task | naive ms | best ms | speedup | evaluations (stop) | best path |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    if logs:
        g = math.exp(sum(logs) / len(logs))
        faster = sum(1 for x in logs if x > math.log(1.05))
        print(f"\ngeomean over the naive kernels: {g:.2f}x over {len(logs)} tasks; {faster} faster by more than 5%")


if __name__ == "__main__":
    main(sys.argv[1])
