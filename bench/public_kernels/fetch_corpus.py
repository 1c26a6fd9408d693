#!/usr/bin/env python3
"""Re-creates the fetched corpus (issue 29 item 5): one task file per kernel of corpus_tasks.py, read from
bare mirrors of the public repositories at the pinned commits, into an ignored folder.

The mirrors come from the session tool `fetch github:OWNER/NAME`, which leaves a bare git directory at
/work/.mirror/OWNER+NAME/repo; any bare clone or checkout works (`git clone --bare
https://github.com/OWNER/NAME MIRRORS/OWNER+NAME/repo`). Files are read with `git show COMMIT:PATH`, so
the mirror's HEAD may have moved on. Nothing fetched is committed: the output folder is git-ignored.

Each task file: a header naming the source (repository, commit, path, kernel, class, role, twin), the
prelude (ours: the constants, typedefs and macros the kernel takes from the rest of its file), the device
helpers it calls (verbatim), the launch spec and `// torch:` lines (ours), then the kernel verbatim.
corpus.json beside them lists every task with its repository, class, role and twin (no code).

Usage: python3 bench/public_kernels/fetch_corpus.py [--mirrors DIR] [--out DIR] [--only STEM,...]
  --mirrors: default /work/.mirror        --out: default public-kernels/corpus (git-ignored)
  --only: re-create these task files only (corpus.json is left as it is)
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from corpus_tasks import REPOS, TASKS  # noqa: E402
from fetched import ExtractError, definition, git_show, task_file  # noqa: E402


def task_text(task, src):
    repo, commit = REPOS[task["repo"]]
    header = [
        f"// task: corpus_{task['stem']}",
        f"// class: {task['class']}",
        f"// corpus: {task['role']}" + (f" (expert twin: corpus_{task['twin']})" if task.get("twin") else ""),
        f"// source: https://github.com/{repo}/blob/{commit}/{task['path']} ({task['kernel']}, verbatim below the spec;",
        "//   the prelude and the spec are ours; device helpers are copied from the same file)",
    ]
    prelude = "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cmath>\n#include <cstdint>\n" + task["prelude"]
    return task_file(header, prelude, [definition(src, h) for h in task["helpers"]], task["spec"],
                     definition(src, task["kernel"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--out", default=os.path.join(ROOT, "public-kernels", "corpus"))
    ap.add_argument("--only", help="comma-separated stems")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    os.makedirs(args.out, exist_ok=True)
    index, failed = [], []
    for t in TASKS:
        if only and t["stem"] not in only:
            continue
        repo, commit = REPOS[t["repo"]]
        mirror = os.path.join(args.mirrors, repo.replace("/", "+"), "repo")
        try:
            text = task_text(t, git_show(mirror, commit, t["path"]))
        except ExtractError as e:
            failed.append(f"{t['stem']}: {e}")
            continue
        path = os.path.join(args.out, f"corpus_{t['stem']}.cu")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        index.append({"task": f"corpus_{t['stem']}", "file": os.path.relpath(path, ROOT), "repo": repo, "commit": commit,
                      "path": t["path"], "kernel": t["kernel"], "class": t["class"], "role": t["role"],
                      "twin": f"corpus_{t['twin']}" if t.get("twin") else None})
        print(path)
    if not only:  # a partial run leaves the index of the whole corpus as it was
        with open(os.path.join(args.out, "corpus.json"), "w", encoding="utf-8") as f:
            json.dump(index, f, indent=1)
    for line in failed:
        print("FAILED", line, file=sys.stderr)
    naive = [r for r in index if r["role"] == "naive"]
    print(f"# {len(naive)} naive kernels from {len({r['repo'] for r in naive})} repositories, "
          f"{len(index) - len(naive)} expert twins -> {args.out}", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
