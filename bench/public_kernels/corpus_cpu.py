#!/usr/bin/env python3
"""The CPU measurement over the fetched corpus (issue 29 item 5), no GPU: per task file,
`kernelpro check --format json` (the findings) and a search with the stub evaluator
(`kernelpro optimize --evaluator stub:1`), whose every candidate is compiled by nvcc before it is
"timed" (a candidate that fails shows as `compile_error` in the search's `tried` list).

Per task: the structural findings (the codes in STRUCTURAL_CODES), the structural rewrites among the
candidates with their outcomes, and every candidate that failed to compile. Per repository and overall:
of the naive kernels with a structural finding, the share that got a structural candidate that compiles
(issue 29's goal: >= 90%), and the count of candidates that failed to compile (goal: 0).

Raw output goes to OUT/raw/TASK.{check,optimize}.json with every candidate source removed (the
candidates of fetched kernels are derived code and stay out of commits), the table to OUT/tasks.tsv and
the summary to OUT/summary.md.

Usage: python3 bench/public_kernels/corpus_cpu.py [--budget N] [--jobs J] [--only TASK,... [--update] | --summarize] CORPUS_DIR OUT_DIR
  CORPUS_DIR: what fetch_corpus.py wrote (public-kernels/corpus, with corpus.json)
Needs target/debug/kernelpro (or KERNELPRO_BIN) and nvcc (KERNELPRO_NVCC or KERNELPRO_VENV).
"""
import argparse
import json
import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from coverage import STRUCTURAL  # noqa: E402  (the rewrites that change how work maps to threads)

# Findings that name a structural problem (issue 29: a row walk, an uncoalesced access, atomic
# contention, missed reuse across threads).
STRUCTURAL_CODES = {"RowWalk", "UncoalescedAccess", "AtomicContention", "MissedReuse"}


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"


def strip_sources(obj):
    """The optimizer's JSON without candidate sources or edits (derived from fetched code)."""
    if isinstance(obj, dict):
        return {k: strip_sources(v) for k, v in obj.items() if k not in ("source", "new_text", "edit", "text")}
    if isinstance(obj, list):
        return [strip_sources(v) for v in obj]
    return obj


def measure(kp, task, budget, raw):
    name, path, kernel = task["task"], os.path.join(ROOT, task["file"]), task["kernel"]
    row = dict(task)
    rc, out, err = run([kp, "check", "--format", "json", path], 600)
    findings = []
    if rc in (0, 1) and out.strip():
        doc = json.loads(out)
        with open(os.path.join(raw, name + ".check.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        for fl in doc.get("files", []):
            for fd in fl.get("findings", []):
                if fd.get("kernel") in (None, kernel):
                    findings.append((fd["code"], fd["span"]["start"]["line"], fd["severity"]))
    else:
        row["check_error"] = (err.strip().splitlines() or ["?"])[-1]
    row["codes"] = sorted({c for c, _, _ in findings})
    row["structural_codes"] = sorted({c for c, _, _ in findings if c in STRUCTURAL_CODES})
    rc, out, err = run([kp, "optimize", "--kernel", kernel, "--evaluator", "stub:1", "--budget", str(budget),
                        "--no-profile", "--json", path], 1800)
    try:
        doc = json.loads(out)
    except ValueError:
        row["optimize_error"] = (err.strip().splitlines() or ["?"])[-1]
        return row
    doc = strip_sources(doc)
    with open(os.path.join(raw, name + ".optimize.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    tried = doc.get("tried", [])[1:]
    row["tried"] = [(t["recipe"], t["outcome"], (t.get("detail") or "")[:300]) for t in tried]
    row["structural_tried"] = [(r, o) for r, o, _ in row["tried"] if r in STRUCTURAL]
    row["structural_ok"] = any(o == "ok" for _, o in row["structural_tried"])
    # nvcc stopped by kernelpro's compile timeout (CUTLASS candidates on a loaded machine) is not a
    # compile error of the candidate: counted apart.
    timeout = lambda d: "did not finish within" in d
    row["compile_errors"] = [(r, d) for r, o, d in row["tried"] if o == "compile_error" and not timeout(d)]
    row["compile_timeouts"] = [(r, d) for r, o, d in row["tried"] if o == "compile_error" and timeout(d)]
    row["notes"] = doc.get("notes", [])
    return row


def share(a, b):
    return f"{a}/{b} ({100 * a / b:.0f}%)" if b else "–"


def summarize(rows):
    lines = ["| repository | naive kernels | with a structural finding | of those, a structural candidate that compiles | "
             "… one that remaps work (not only GridStrideMap) | structural candidates tried (all tasks) | "
             "candidates that failed to compile (all tasks) |",
             "|---|---|---|---|---|---|---|"]
    groups = {}
    for r in rows:
        groups.setdefault(r["repo"], []).append(r)
    for label, rs in sorted(groups.items()) + [("all", rows)]:
        naive = [r for r in rs if r["role"] == "naive"]
        flagged = [r for r in naive if r.get("structural_codes")]
        covered = [r for r in flagged if r.get("structural_ok")]
        # GridStrideMap changes the launch and the loop around the body, not which thread touches
        # which element: it answers no structural finding by itself.
        remapped = [r for r in flagged if any(o == "ok" and n != "GridStrideMap" for n, o in r.get("structural_tried", []))]
        tried = sum(len(r.get("structural_tried", [])) for r in rs)
        errs = [d for r in rs for _, o, d in r.get("tried", []) if o == "compile_error"]
        timeouts = sum(1 for d in errs if "did not finish within" in d)
        lines.append(f"| {label} | {len(naive)} | {len(flagged)} | {share(len(covered), len(flagged))} | "
                     f"{share(len(remapped), len(flagged))} | {tried} | "
                     f"{len(errs) - timeouts}" + (f" (+{timeouts} nvcc timeouts)" if timeouts else "") + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("out")
    ap.add_argument("--budget", type=int, default=12)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only")
    ap.add_argument("--update", action="store_true", help="keep OUT's other rows (rows.json): re-measure only the tasks given")
    ap.add_argument("--summarize", action="store_true", help="measure nothing: rewrite tasks.tsv and summary.md from OUT/rows.json")
    args = ap.parse_args()
    if args.summarize:
        args.only, args.update = "-", True
    kp = os.environ.get("KERNELPRO_BIN", os.path.join(ROOT, "target", "debug", "kernelpro"))
    with open(os.path.join(args.corpus, "corpus.json"), encoding="utf-8") as f:
        tasks = json.load(f)
    if args.only:
        keep = set(args.only.split(","))
        tasks = [t for t in tasks if t["task"] in keep]
    raw = os.path.join(args.out, "raw")
    os.makedirs(raw, exist_ok=True)
    rows = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for row in pool.map(lambda t: measure(kp, t, args.budget, raw), tasks):
            rows.append(row)
            st = ", ".join(f"{r}:{o}" for r, o in row.get("structural_tried", [])) or "none"
            print(f"{row['task']}\t{row['role']}\t{','.join(row.get('structural_codes', [])) or '-'}\t"
                  f"structural: {st}\tcompile errors: {len(row.get('compile_errors', []))}"
                  + (f"\t{row.get('check_error') or row.get('optimize_error')}" if row.get('check_error') or row.get('optimize_error') else ""),
                  flush=True)
    if args.update and os.path.exists(os.path.join(args.out, "rows.json")):
        with open(os.path.join(args.out, "rows.json"), encoding="utf-8") as f:
            done = {r["task"]: r for r in json.load(f)}
        done.update({r["task"]: r for r in rows})
        order = [t["task"] for t in json.load(open(os.path.join(args.corpus, "corpus.json"), encoding="utf-8"))]
        rows = [done[t] for t in order if t in done]
    with open(os.path.join(args.out, "rows.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(args.out, "tasks.tsv"), "w", encoding="utf-8") as f:
        f.write("task\trepo\tclass\trole\tcodes\tstructural codes\tstructural candidates\tcompile errors\tdistinct rewrites tried\n")
        for r in rows:
            f.write("\t".join([r["task"], r["repo"], r["class"], r["role"], ",".join(r.get("codes", [])),
                               ",".join(r.get("structural_codes", [])),
                               ", ".join(f"{a}:{b}" for a, b in r.get("structural_tried", [])),
                               "; ".join(f"{a}: {d[:120]}" for a, d in r.get("compile_errors", [])),
                               ", ".join(dict.fromkeys(a for a, _, _ in r.get("tried", [])))]) + "\n")
    summary = summarize(rows)
    with open(os.path.join(args.out, "summary.md"), "w", encoding="utf-8") as f:
        f.write(summary)
    print(summary)


if __name__ == "__main__":
    main()
