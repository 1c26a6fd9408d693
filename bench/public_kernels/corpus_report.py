#!/usr/bin/env python3
"""Issue 29's GPU table for the fetched corpus, from a run.py result folder and corpus.json: per
repository and overall, over the naive kernels, the geomean speedup of kernelpro's best over the naive
kernel, the geomean of best vs PyTorch eager and vs torch.compile, the share of naive kernels correct and
within 1.25x of eager's time, and, over the naive kernels whose repository has an expert version, the
expert's speedup over the naive kernel, kernelpro's, and the share of the expert's speedup kernelpro
reached (geomean of best-vs-naive over expert-vs-naive: 1.0 = as fast as the expert).

The expert twin is a task of its own (its own torch reference, the same problem size); its `naive`
time is the expert kernel as its author wrote it. Goals (issue 29): geomean over naive >= 5x, vs eager
>= 0.9x, >= 60% within 1.25x of eager, >= 0.7 of the expert speedup.

Usage: python3 bench/public_kernels/corpus_report.py RESULT_DIR [CORPUS_JSON]
  CORPUS_JSON: default public-kernels/corpus/corpus.json
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load(d):
    rows = {}
    path = os.path.join(d, "results.jsonl")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            rows = {r["task"]: r for r in map(json.loads, f)}
    tasks = os.path.join(d, "tasks")
    for t in sorted(os.listdir(tasks)) if os.path.isdir(tasks) else []:
        p = os.path.join(tasks, t, "result.json")
        if t not in rows and os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                r = json.load(f)
            rows[r["task"]] = r
    return rows


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def ms(r, which):
    return ((r or {}).get("times", {}).get(which) or {}).get("median_ms")


def ok(r):
    return bool(r) and r.get("correct") and "error" not in r


def line(label, naive, results):
    good = [results.get(t["task"]) for t in naive if ok(results.get(t["task"]))]
    f = lambda x: f"{x:.2f}x" if x else "–"
    within = sum(1 for r in good if (r.get("speedup_over_eager") or 0) >= 0.8)
    exp_sp, kp_sp, shares = [], [], []
    for t in naive:
        r, e = results.get(t["task"]), results.get(t["twin"]) if t.get("twin") else None
        if not (ok(r) and e and e.get("naive_correct")):
            continue
        n_ms, b_ms, e_ms = ms(r, "naive"), ms(r, "best"), ms(e, "naive")
        if n_ms and b_ms and e_ms:
            exp_sp.append(n_ms / e_ms)
            kp_sp.append(n_ms / b_ms)
            shares.append((n_ms / b_ms) / (n_ms / e_ms))
    n = len(naive)
    return (f"| {label} | {n} | {len(good)} | {f(geomean([r.get('speedup_over_naive') for r in good]))} | "
            f"{f(geomean([r.get('speedup_over_eager') for r in good]))} | {f(geomean([r.get('speedup_over_compile') for r in good]))} | "
            f"{within} ({100 * within / max(n, 1):.0f}%) | {len(shares)} | {f(geomean(exp_sp))} | {f(geomean(kp_sp))} | "
            f"{geomean(shares):.2f} |" if shares else
            f"| {label} | {n} | {len(good)} | {f(geomean([r.get('speedup_over_naive') for r in good]))} | "
            f"{f(geomean([r.get('speedup_over_eager') for r in good]))} | {f(geomean([r.get('speedup_over_compile') for r in good]))} | "
            f"{within} ({100 * within / max(n, 1):.0f}%) | 0 | – | – | – |")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    results = load(sys.argv[1])
    index_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "public-kernels", "corpus", "corpus.json")
    with open(index_path, encoding="utf-8") as f:
        index = json.load(f)
    naive = [t for t in index if t["role"] == "naive"]
    print("| repository | naive kernels | correct | geomean vs naive | best vs eager | best vs torch.compile | "
          "within 1.25x of eager | with expert twin | expert vs naive | kernelpro vs naive (same kernels) | share of expert speedup |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    by_repo = {}
    for t in naive:
        by_repo.setdefault(t["repo"], []).append(t)
    for repo in sorted(by_repo):
        print(line(repo, by_repo[repo], results))
    print(line("**all**", naive, results))
    missing = [t["task"] for t in index if t["task"] not in results]
    if missing:
        print(f"\nnot measured ({len(missing)}): {', '.join(missing)}")


if __name__ == "__main__":
    main()
