#!/usr/bin/env python3
"""The report of a stored KernelBench run (its results.jsonl and env.json) rendered again by this
checkout's run.py: each result back in a tasks/STEM/result.json of a temporary folder, then
`run.py --report-only`. For a report change on runs already kept (bench/kernelbench/results/).
Usage: python3 bench/kernelbench/rereport.py RESULTS_DIR [OUT.md]   (default: RESULTS_DIR/report-rerendered.md)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    src = sys.argv[1]
    dest = sys.argv[2] if len(sys.argv) > 2 else os.path.join(src, "report-rerendered.md")
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for line in open(os.path.join(src, "results.jsonl")):
            r = json.loads(line)
            stem = os.path.splitext(os.path.basename(r["file"]))[0]
            os.makedirs(os.path.join(tmp, "tasks", stem))
            with open(os.path.join(tmp, "tasks", stem, "result.json"), "w") as f:
                json.dump(r, f)
            files.append(r["file"])
        if os.path.exists(os.path.join(src, "env.json")):
            shutil.copy(os.path.join(src, "env.json"), tmp)
        # The task list is the slice's own (every task counts in the shares), not only those measured.
        subprocess.run([sys.executable, os.path.join(HERE, "run.py"), "--report-only", "--out", tmp],
                       check=True, stdout=subprocess.DEVNULL)
        shutil.copy(os.path.join(tmp, "report.md"), dest)
    print(open(dest).read())


if __name__ == "__main__":
    main()
