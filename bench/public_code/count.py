#!/usr/bin/env python3
"""Counts what `kernelpro check` finds on public CUDA code you fetched yourself.

    bench/public_code/count.py DIR [--kernelpro BIN] [--arch sm_90] [-I LIBDIR ...] [--json OUT.json]

DIR holds one folder per repository (e.g. DIR/karpathy+llm.c/...), kept out of
commits; this script fetches nothing. Every `.cu` file is checked with
`kernelpro check --format json`, with `-I` for the repository's root and each
folder a quoted include of the repository resolves from, so `#include
"common.h"` resolves as the project's build would, plus each -I given (the headers of libraries the code uses beyond the
toolkit's runtime, e.g. cuBLAS's `include/`). Kernels defined in headers that several files include, and the findings
in them, are counted once.

Prints a Markdown table (per repository: files, files that compile, kernels,
findings per code) and writes every finding to --json, to read a sample of them
for false positives.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

HEADER_SUFFIXES = (".h", ".cuh", ".hpp", ".hh")


def include_dirs(repo: Path) -> list[str]:
    """The repository root, and each folder a quoted `#include "a/b.h"` of the
    repository resolves from: never a folder only `<…>` would reach (llm.c's
    `dev/unistd.h`, a Windows shim, must not hide the system's)."""
    headers = [p for p in repo.rglob("*") if p.suffix in HEADER_SUFFIXES and p.is_file()]
    dirs = {str(repo)}
    for src in list(repo.rglob("*.cu")) + headers:
        try:
            text = src.read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            line = line.strip()
            if not line.startswith("#include") or '"' not in line:
                continue
            name = line.split('"')[1]
            for h in headers:
                if h.as_posix().endswith("/" + name):
                    dirs.add(h.as_posix()[: -len(name) - 1])
    return sorted(dirs)


def check(kernelpro: str, arch: str, cu: Path, includes: list[str]) -> dict:
    argv = [kernelpro, "check", "--format", "json", "--arch", arch]
    for d in includes:
        argv += ["-I", d]
    argv.append(str(cu))
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    try:
        return json.loads(out.stdout)["files"][0]
    except (json.JSONDecodeError, KeyError, IndexError):
        return {"path": str(cu), "findings": [], "kernels": [], "crashed": out.stderr[-2000:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path)
    ap.add_argument("--kernelpro", default=str(Path(__file__).resolve().parents[2] / "target/debug/kernelpro"))
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--json", type=Path, help="write every finding here")
    ap.add_argument("-I", dest="include", action="append", default=[], help="an extra include folder (repeatable)")
    args = ap.parse_args()

    repos = sorted(p for p in args.dir.iterdir() if p.is_dir())
    all_codes: collections.Counter = collections.Counter()
    rows = []
    dump = []
    for repo in repos:
        includes = include_dirs(repo) + [str(Path(i).resolve()) for i in args.include]
        files = sorted(repo.rglob("*.cu"))
        kernels = set()
        findings = {}
        compiled = crashed = 0
        for cu in files:
            print(f"checking {cu.relative_to(args.dir)}", file=sys.stderr)
            result = check(args.kernelpro, args.arch, cu, includes)
            if "crashed" in result:
                crashed += 1
                dump.append({"path": str(cu), "crashed": result["crashed"]})
                continue
            errors = [f for f in result["findings"] if f["severity"] == "error"]
            if not errors:
                compiled += 1
            else:
                first = errors[0]
                where = first.get("file") or str(cu)
                print(f"  does not compile: {where}:{first['span']['start']['line'] + 1}: {first['message'][:160]}",
                      file=sys.stderr)
                dump.append({"path": str(cu), "error": first["message"], "file": where})
            for k in result["kernels"]:
                kernels.add((k.get("file") or str(cu), k["name"], k["line"]))
            for f in result["findings"]:
                if f.get("source") != "kernelpro" or f.get("code") in (None, "header-kernels"):
                    continue
                where = f.get("file") or str(cu)
                key = (where, f["span"]["start"]["line"], f["code"], f["message"])
                findings.setdefault(key, f | {"file": where})
        codes = collections.Counter(f["code"] for f in findings.values())
        all_codes.update(codes)
        rows.append((repo.name, len(files), compiled, crashed, len(kernels), codes))
        dump.extend(sorted(findings.values(), key=lambda f: (f["file"], f["span"]["start"]["line"])))

    order = [c for c, _ in all_codes.most_common()]
    print("| repository | .cu files | compile | crashed | kernels | findings | " + " | ".join(order) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(order))
    total = [0, 0, 0, 0, collections.Counter()]
    for name, nfiles, ok, crashed, nkernels, codes in rows:
        print(f"| {name} | {nfiles} | {ok} | {crashed} | {nkernels} | {sum(codes.values())} | "
              + " | ".join(str(codes.get(c, 0)) for c in order) + " |")
        total[0] += nfiles
        total[1] += ok
        total[2] += crashed
        total[3] += nkernels
        total[4].update(codes)
    print(f"| all | {total[0]} | {total[1]} | {total[2]} | {total[3]} | {sum(total[4].values())} | "
          + " | ".join(str(total[4].get(c, 0)) for c in order) + " |")
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
