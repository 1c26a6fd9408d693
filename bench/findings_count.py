#!/usr/bin/env python3
"""Findings per naive kernel and repeated same-line diagnoses, before and after (issue 32 item 6).

Runs `kernelpro check --format json` of two binaries over three sets of task files and prints one
Markdown table (the one in docs/benchmarks.md), keeping every binary's raw JSON under --out:

  naive        tests/fixtures/naive/*/*.cu: naive kernels (one `// expect:` marker) and their clean/expert
               twins (`// corpus: clean|expert`)
  kernelbench  bench/kernelbench/tasks/*.cu: the KernelBench level-1 slice, every task a naive kernel
  public       public-kernels/corpus/*.cu (git-ignored; `python3 bench/public_kernels/fetch_corpus.py`
               re-creates it): other people's naive kernels and their expert twins, roles from corpus.json;
               skipped when the folder is missing. Its raw JSON keeps only each finding's code, place and
               severity (messages quote the fetched code, which is never committed)

Per set and binary:
  findings per naive kernel  findings with a code on the naive files (the file's own lines only)
  repeated                   one diagnosis told twice: an UncoalescedAccess on an access that a RowWalk of
                             the same file already names (its `walked accesses` evidence), or two findings
                             of one code on one line (tests/naive_corpus.rs counts the same way)
  lines told twice           lines of naive files that carry two or more structural findings
                             (RowWalk, UncoalescedAccess, MissedReuse, AtomicContention)
  disagreeing advice         files whose RowWalk findings give different fixes (identifiers masked)
  clean/expert warnings      warning-level findings on the clean and expert files (the goal is 0)

Usage: python3 bench/findings_count.py --before OLD_BIN --after NEW_BIN [--out DIR] [--sets naive,kernelbench,public]
  The nvcc of $KERNELPRO_VENV (default .venv) is put on PATH. --out: default bench/results/findings-count.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STRUCTURAL = {"RowWalk", "UncoalescedAccess", "MissedReuse", "AtomicContention"}


def naive_set():
    tasks = []
    base = os.path.join(ROOT, "tests/fixtures/naive")
    for cls in sorted(os.listdir(base)):
        d = os.path.join(base, cls)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith(".cu"):
                continue
            path = os.path.join(d, f)
            text = open(path).read()
            m = re.search(r"^// corpus: (\w+)", text, re.M)
            tasks.append((os.path.relpath(path, ROOT), m.group(1) if m else "naive"))
    return tasks


def kernelbench_set():
    base = os.path.join(ROOT, "bench/kernelbench/tasks")
    return [(os.path.relpath(os.path.join(base, f), ROOT), "naive") for f in sorted(os.listdir(base)) if f.endswith(".cu")]


def public_set():
    index = os.path.join(ROOT, "public-kernels/corpus/corpus.json")
    if not os.path.exists(index):
        return None
    return [(t["file"], t["role"]) for t in json.load(open(index)) if os.path.exists(os.path.join(ROOT, t["file"]))]


SETS = {"naive": naive_set, "kernelbench": kernelbench_set, "public": public_set}


def check(binary, files, env, workers=2):
    """`check --format json` over the files (WORKERS processes); {path: [findings]} and the seconds it took."""
    chunks = [files[w::workers] for w in range(workers) if files[w::workers]]

    def run(chunk):
        p = subprocess.run([binary, "check", "--format", "json", *chunk], cwd=ROOT, env=env, capture_output=True, text=True)
        try:
            return json.loads(p.stdout)
        except json.JSONDecodeError:
            sys.exit(f"{binary} check gave no JSON (exit {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")

    t0 = time.time()
    with ThreadPoolExecutor(workers) as pool:
        outs = list(pool.map(run, chunks))
    by_file = {}
    for out in outs:
        for f in out["files"]:
            by_file[os.path.relpath(os.path.join(ROOT, f["path"]), ROOT)] = f["findings"]
    return by_file, time.time() - t0


def stripped(f):
    """A finding without its words: the public corpus's messages and evidence quote fetched code, which is
    never committed; its code, place and severity are what the counts use."""
    return {k: f[k] for k in ("code", "severity", "span", "file") if k in f}


def own(path, findings):
    """The findings on the file's own lines (not those of an included header)."""
    return [f for f in findings if os.path.relpath(os.path.join(ROOT, f.get("file", path)), ROOT) == path]


def line(f):
    return f["span"]["start"]["line"]


def measure(tasks, by_file):
    m = {"naive": 0, "naive_findings": 0, "repeated": [], "told_twice": [], "advice": [], "clean": 0, "clean_warnings": [],
         "per_file": {}}
    for path, role in tasks:
        fs = [f for f in own(path, by_file.get(path, [])) if f.get("code")]
        m["per_file"][path] = {"role": role, "findings": [f"{f['code']}:{line(f) + 1}:{f['severity']}" for f in fs]}
        if role != "naive":
            m["clean"] += 1
            m["clean_warnings"] += [f"{path}:{line(f) + 1} {f['code']}" for f in fs if f["severity"] == "warning"]
            continue
        m["naive"] += 1
        m["naive_findings"] += len(fs)
        walked = [
            a
            for f in fs
            if f["code"] == "RowWalk"
            for e in f.get("evidence", [])
            if e.get("name") == "walked accesses"
            for a in str(e.get("value", "")).split(", ")
        ]
        seen = set()
        for f in fs:
            again = f["code"] == "UncoalescedAccess" and any(f["message"].startswith(f"`{w}`") for w in walked)
            key = (f["code"], line(f))
            if again or key in seen:
                m["repeated"].append(f"{path}:{line(f) + 1} {f['code']}")
            seen.add(key)
        per_line = {}
        for f in fs:
            if f["code"] in STRUCTURAL:
                per_line.setdefault(line(f), []).append(f["code"])
        m["told_twice"] += [f"{path}:{ln + 1} {'+'.join(c)}" for ln, c in sorted(per_line.items()) if len(c) > 1]
        fixes = {re.sub(r"`[^`]*`", "`X`", f.get("guidance", "")) for f in fs if f["code"] == "RowWalk"}
        if len(fixes) > 1:
            m["advice"].append(path)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results/findings-count"))
    ap.add_argument("--sets", default="naive,kernelbench,public")
    args = ap.parse_args()
    venv = os.environ.get("KERNELPRO_VENV", os.path.join(ROOT, ".venv"))
    env = dict(os.environ, PATH=os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"], KERNELPRO_VENV=venv)
    os.makedirs(args.out, exist_ok=True)
    rows, summary = [], {}
    for name in args.sets.split(","):
        tasks = SETS[name]()
        if tasks is None:
            print(f"# {name}: public-kernels/corpus/ is missing (python3 bench/public_kernels/fetch_corpus.py): skipped",
                  file=sys.stderr)
            continue
        files = [p for p, _ in tasks]
        res = {}
        for which, binary in (("before", args.before), ("after", args.after)):
            by_file, secs = check(os.path.abspath(binary), files, env)
            missing = [p for p in files if p not in by_file]
            if missing:
                sys.exit(f"{binary}: no result for {missing[:5]}")
            kept = {p: [stripped(f) for f in fs] for p, fs in by_file.items()} if name == "public" else by_file
            json.dump(kept, open(os.path.join(args.out, f"{name}-{which}.json"), "w"), indent=1)
            res[which] = measure(tasks, by_file)
            res[which]["seconds"] = round(secs, 1)
        summary[name] = {w: {k: v for k, v in r.items() if k != "per_file"} for w, r in res.items()}
        b, a = res["before"], res["after"]
        n = a["naive"]

        def arrow(key, fmt=len):
            return f"{fmt(b[key])} → {fmt(a[key])}"

        rows.append(
            f"| {name} ({n} naive, {a['clean']} clean/expert) "
            f"| {b['naive_findings'] / n:.2f} → {a['naive_findings'] / n:.2f} ({b['naive_findings']} → {a['naive_findings']}) "
            f"| {arrow('repeated')} | {arrow('told_twice')} | {arrow('advice')} "
            f"| {arrow('clean_warnings') if a['clean'] else '—'} |"
        )
        with open(os.path.join(args.out, f"{name}-per-file.txt"), "w") as out:
            for path, _ in tasks:
                out.write(f"{path} [{b['per_file'][path]['role']}]\n  before: {' '.join(b['per_file'][path]['findings'])}\n"
                          f"  after:  {' '.join(a['per_file'][path]['findings'])}\n")
    json.dump(summary, open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    table = [
        "| set | findings per naive kernel | repeated diagnoses | lines with 2+ structural findings "
        "| files with disagreeing RowWalk advice | warnings on clean/expert kernels |",
        "|---|---|---|---|---|---|",
        *rows,
    ]
    text = "\n".join(table) + "\n"
    open(os.path.join(args.out, "table.md"), "w").write(text)
    print(text)
    for name, s in summary.items():
        for which in ("before", "after"):
            for key in ("repeated", "told_twice", "advice", "clean_warnings"):
                if s[which][key]:
                    print(f"{name} {which} {key}: {', '.join(s[which][key])}")


if __name__ == "__main__":
    main()
