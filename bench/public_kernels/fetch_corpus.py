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
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from corpus_tasks import REPOS, TASKS  # noqa: E402


class ExtractError(Exception):
    pass


def git_show(mirror, commit, path):
    git_dir = mirror if os.path.isdir(os.path.join(mirror, "objects")) else os.path.join(mirror, ".git")
    p = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], capture_output=True)
    if p.returncode != 0:
        raise ExtractError(f"{mirror}: {commit}:{path}: {p.stderr.decode(errors='replace').strip()}")
    return p.stdout.decode("utf-8", errors="replace")


def _skip(src, i):
    """Index after a comment, string or char literal starting at i (i itself if none starts there)."""
    if src.startswith("//", i):
        j = src.find("\n", i)
        return len(src) if j < 0 else j
    if src.startswith("/*", i):
        j = src.find("*/", i + 2)
        return len(src) if j < 0 else j + 2
    if src[i] in "\"'":
        q, j = src[i], i + 1
        while j < len(src) and src[j] != q:
            j += 2 if src[j] == "\\" else 1
        return j + 1
    return i


def _match(src, i, open_ch, close_ch):
    """Index after the bracket that closes the one at src[i]."""
    depth = 0
    while i < len(src):
        j = _skip(src, i)
        if j != i:
            i = j
            continue
        if src[i] == open_ch:
            depth += 1
        elif src[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ExtractError("unbalanced brackets")


def _code_mask(src):
    """Positions that are code (not inside comments or literals)."""
    mask, i = [True] * len(src), 0
    while i < len(src):
        j = _skip(src, i)
        if j != i:
            for k in range(i, min(j, len(src))):
                mask[k] = False
            i = j
        else:
            i += 1
    return mask


def definition(src, name):
    """NAME's definition (a function or function template, not a prototype or a call): from the start of
    its declaration (after the previous `;`, `}` or preprocessor line, leading comments dropped) to its
    closing brace."""
    mask = _code_mask(src)
    for m in re.finditer(r"\b" + re.escape(name) + r"\s*(?:<[^;{}()]*>\s*)?\(", src):
        if not mask[m.start()]:
            continue
        close = _match(src, m.end() - 1, "(", ")")
        rest = src[close:]
        body = re.match(r"\s*(?:const\s*)?\{", rest)
        if not body:
            continue
        # Start: walk back over the declaration to the end of the previous top-level item.
        k = m.start()
        while k > 0:
            c = src[k - 1]
            if mask[k - 1] and c in ";}":
                break
            if c == "\n" and src[k:].lstrip(" \t").startswith("#"):
                k = src.find("\n", k) + 1
                break
            k -= 1
        head = src[k:m.start()]
        if "__global__" not in head and "__device__" not in head and "template" not in head:
            continue
        # Drop leading comments and blank lines (the author's notes about earlier code): the spec
        # goes directly above the kernel, as a user writes it.
        while True:
            rest = src[k:]
            stripped = rest.lstrip(" \t\n")
            if stripped.startswith("//"):
                k += len(rest) - len(stripped) + stripped.find("\n") + 1
            elif stripped.startswith("/*"):
                k += len(rest) - len(stripped) + stripped.find("*/") + 2
            else:
                k += len(rest) - len(stripped)
                break
        end = _match(src, close + body.end() - 1, "{", "}")
        return src[k:end].strip("\n") + "\n"
    raise ExtractError(f"no definition of `{name}`")


def task_text(task, src):
    repo, commit = REPOS[task["repo"]]
    lines = [
        f"// task: corpus_{task['stem']}",
        f"// class: {task['class']}",
        f"// corpus: {task['role']}" + (f" (expert twin: corpus_{task['twin']})" if task.get("twin") else ""),
        f"// source: https://github.com/{repo}/blob/{commit}/{task['path']} ({task['kernel']}, verbatim below the spec;",
        "//   the prelude and the spec are ours; device helpers are copied from the same file)",
    ]
    out = "\n".join(lines) + "\n#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cmath>\n#include <cstdint>\n"
    out += task["prelude"]
    for h in task["helpers"]:
        out += "\n" + definition(src, h)
    out += "\n" + task["spec"].strip("\n") + "\n"
    out += definition(src, task["kernel"])
    return out


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
