#!/usr/bin/env python3
"""Keeps a corpus run's raw results in the repo without the fetched code they quote.

Usage: python3 bench/public_kernels/keep_results.py TASKS_DIR OUTDIR
TASKS_DIR: the run's per-task folders (corpus-out/tasks, or corpus_gpu.sh's corpus-tasks.tgz unpacked).
Writes OUTDIR/results.jsonl (each task's result.json: run.py's and the optimizer's notes dropped, they
may quote the kernel) and OUTDIR/optimize-summary.jsonl (each search's speedup, evaluations, stop,
pruned points and tried list: recipe, outcome, speedup, parameter point; no notes, no details).
"""
import json
import os
import sys


def main() -> None:
    tasks, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    results, searches = [], []
    for name in sorted(os.listdir(tasks)):
        folder = os.path.join(tasks, name)
        res = os.path.join(folder, "result.json")
        if os.path.exists(res):
            r = json.load(open(res))
            r.pop("notes", None)
            if isinstance(r.get("optimizer"), dict):
                r["optimizer"] = {k: v for k, v in r["optimizer"].items() if k not in ("notes", "edit", "new_text")}
            results.append(r)
        opt = os.path.join(folder, "optimize.json")
        if os.path.exists(opt):
            o = json.load(open(opt))
            searches.append({
                "task": name,
                "speedup": o.get("speedup"),
                "evaluations": o.get("evaluations"),
                "stop": o.get("stop"),
                "pruned_by_prior": o.get("pruned_by_prior"),
                "tried": [
                    {"recipe": t.get("recipe"), "outcome": t.get("outcome"), "speedup": t.get("speedup"), "point": t.get("point")}
                    for t in o.get("tried", [])
                ],
            })
    with open(os.path.join(out, "results.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in results)
    with open(os.path.join(out, "optimize-summary.jsonl"), "w") as f:
        f.writelines(json.dumps(s) + "\n" for s in searches)
    print(f"{len(results)} results, {len(searches)} searches -> {out}")


if __name__ == "__main__":
    main()
