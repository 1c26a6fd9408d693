#!/usr/bin/env python3
"""docs/benchmarks.md's profiling table (issue 33) from a `bash bench/gpu_run.sh profile OUT` folder.

Reads OUT/profile_times.txt (one line per file and mode: `k mode wall N ms ...`, then
profile_on_save.py's lines) and each run's JSON (`compare_{k}_{mode}.json`, or `c_{k}_{mode}.json`
as in bench/results/2026-12-06-h200-cupti-night/runs.tgz), and prints per file: the in-process
profile's wall time, ncu's one launch, `--full`, the ratio to `--full`, where the in-process time
went (each stage's share of its wall time, from the report's `stages`) and whether it found what
ncu's one launch found on the same lines; then profile-on-save's latency after the compile.

    python3 bench/profile_table.py OUT > table.md
    python3 -m doctest bench/profile_table.py   # the tests below

A hand-made folder:

>>> import json, os, tempfile
>>> d = tempfile.mkdtemp()
>>> def report(backend, findings, stages=()):
...     ks = [{"kernel": "k", "triage": {"class": "memory-bound"},
...            "findings": [{"code": c, "span": {"start": {"line": l - 1}}} for l, c in findings]}]
...     return {"report": {"backend": backend, "kernels": ks,
...                        "stages": [{"name": n, "secs": s} for n, s in stages]}}
>>> runs = {"cupti": report("cupti", [(14, "Uncoalesced")], [("k: compile the harness job", 0.2),
...             ("k: injected run (range,sass,pc)", 1.2), ("k: in the library: range", 0.5),
...             ("k: disassembly (during the later runs)", 0.1), ("k: source pages", 0.01)]),
...         "ncu": report("ncu", [(14, "Uncoalesced")]),
...         "full": report("ncu", [(14, "Uncoalesced"), (9, "WarpStall")])}
>>> for mode, r in runs.items():
...     json.dump(r, open(os.path.join(d, f"compare_copy_{mode}.json"), "w"))
>>> _ = open(os.path.join(d, "profile_times.txt"), "w").write(
...     "copy cupti wall 1600 ms cupti 1.2 0.1\\ncopy ncu wall 4000 ms\\ncopy full wall 6400 ms\\n"
...     "bench/kernels/copy.cu (cupti): the first save's profile (every kernel) lands 1.10 s after the compile's diagnostics (1 kernels profiled)\\n"
...     "bench/kernels/copy.cu (cupti): profile lands 0.90 s after the compile's diagnostics (median of 3)\\n")
>>> print(table(d))
| file | in-process (s) | ncu one launch (s) | `--full` (s) | ratio | in-process stages (share of its wall time) | same findings on the same lines as ncu |
|---|---|---|---|---|---|---|
| `copy` | 1.60 | 4.00 | 6.40 | 0.25 | injected run (range,sass,pc) 75% (in the library: range 31%), compile the harness job 12%, disassembly (during the later runs) 6%, source pages 1% | yes (1 findings) |
<BLANKLINE>
| file | backend | profile lands after the compile (s) | the document's first save, every kernel measured (s) |
|---|---|---|---|
| `bench/kernels/copy.cu` | cupti | 0.90 | 1.10 |
"""

import json
import os
import re
import sys

MODES = ("cupti", "ncu", "full")


def load(folder, k, mode):
    """A run's JSON report, or None where it is missing or not JSON."""
    for name in (f"compare_{k}_{mode}.json", f"c_{k}_{mode}.json"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            try:
                return json.load(open(path))["report"]
            except (ValueError, KeyError):
                return None
    return None


def findings(report):
    """`line code` of every finding (lines 1-based), as the GPU test compares them.

    >>> findings({"kernels": [{"findings": [{"code": "X", "span": {"start": {"line": 8}}}]}]})
    {'9 X'}
    """
    return {f"{f['span']['start']['line'] + 1} {f.get('code')}" for k in report["kernels"] for f in k["findings"]}


def classes(report):
    """`kernel: class` of every kernel."""
    return {f"{k['kernel']}: {(k.get('triage') or {}).get('class')}" for k in report["kernels"]}


def shares(report, wall):
    """Each stage's share of the wall time, largest first; the library's own steps (inside
    the injected runs) in parentheses after the run they belong to. A kernel's prefix in
    harness mode (`k: `) is dropped and its stages summed over kernels.

    >>> shares({"stages": [{"name": "a: injected run (pc)", "secs": 1.0},
    ...                    {"name": "a: in the library: pc", "secs": 0.5}]}, 2.0)
    'injected run (pc) 50% (in the library: pc 25%)'
    """
    top, inner = {}, {}
    for s in report.get("stages") or []:
        name = re.sub(r"^[A-Za-z_][\w:<>, ]*?: (?=(injected|in the|disassembly|source|compile|ncu|in-process))", "", s["name"])
        (inner if name.startswith("in the library:") else top)[name] = (
            (inner if name.startswith("in the library:") else top).get(name, 0.0) + s["secs"]
        )
    if not top or not wall:
        return "—"
    parts = []
    lib = ", ".join(f"{n} {v / wall:.0%}" for n, v in sorted(inner.items(), key=lambda x: -x[1]))
    for n, v in sorted(top.items(), key=lambda x: -x[1]):
        part = f"{n} {v / wall:.0%}"
        if lib and n.startswith("injected run"):
            part += f" ({lib})"
            lib = ""
        parts.append(part)
    return ", ".join(parts)


def table(folder):
    walls, order, saves, firsts = {}, [], [], {}
    for line in open(os.path.join(folder, "profile_times.txt")):
        m = re.match(r"(\S+) (cupti|ncu|full) wall (\d+) ms", line)
        if m:
            k, mode, ms = m.group(1), m.group(2), int(m.group(3))
            walls[(k, mode)] = ms / 1000
            if k not in order:
                order.append(k)
            continue
        m = re.match(r"(\S+) \((\w+)\): profile lands ([\d.]+) s after the compile", line)
        if m:
            saves.append((m.group(1), m.group(2), float(m.group(3))))
        m = re.match(r"(\S+) \((\w+)\): the first save's profile \(every kernel\) lands ([\d.]+) s", line)
        if m:
            firsts[(m.group(1), m.group(2))] = float(m.group(3))
    out = [
        "| file | in-process (s) | ncu one launch (s) | `--full` (s) | ratio | in-process stages (share of its wall time) "
        "| same findings on the same lines as ncu |",
        "|---|---|---|---|---|---|---|",
    ]
    for k in order:
        reports = {mode: load(folder, k, mode) for mode in MODES}
        cupti, ncu, full = (walls.get((k, mode)) for mode in MODES)
        ratio = f"{cupti / full:.2f}" if cupti and full else "—"
        r = reports["cupti"]
        stages = shares(r, cupti) if r else "—"
        if r and r.get("backend") != "cupti":
            stages = f"(measured by {r.get('backend') or '?'}, not in-process)"
        if r and reports["ncu"]:
            a, b = findings(r), findings(reports["ncu"])
            same = f"yes ({len(a)} findings)" if a == b else f"no (only in-process: {sorted(a - b)}, only ncu: {sorted(b - a)})"
            ca, cb = classes(r), classes(reports["ncu"])
            if ca != cb:
                same += f"; classes differ: {sorted(ca - cb)} vs {sorted(cb - ca)}"
        else:
            same = "— (a run failed)"
        num = lambda v: f"{v:.2f}" if v else "—"  # noqa: E731
        if r is None and cupti:
            cupti_cell, ratio = f"failed ({cupti:.2f})", "—"
        else:
            cupti_cell = num(cupti)
        out.append(f"| `{k}` | {cupti_cell} | {num(ncu)} | {num(full)} | {ratio} | {stages} | {same} |")
    if saves:
        out += ["", "| file | backend | profile lands after the compile (s) "
                "| the document's first save, every kernel measured (s) |", "|---|---|---|---|"]
        first = lambda f, b: f"{firsts[(f, b)]:.2f}" if (f, b) in firsts else "—"  # noqa: E731
        out += [f"| `{f}` | {b} | {s:.2f} | {first(f, b)} |" for f, b, s in saves]
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: profile_table.py OUT (a `bench/gpu_run.sh profile OUT` folder)")
    print(table(sys.argv[1]))
