"""Reading kernels from a repository the user fetched (never committed), shared by the task makers."""
import os
import re
import subprocess


def read(repo, folder, rel):
    """`folder/rel` of a checkout, or of a bare git directory (read with `git show`)."""
    if os.path.isdir(os.path.join(repo, folder)):
        with open(os.path.join(repo, folder, rel), encoding="utf-8") as f:
            return f.read()
    return subprocess.run(["git", "--git-dir", repo, "show", f"HEAD:{folder}/{rel}"], check=True,
                          capture_output=True, text=True).stdout


def definition(source, name):
    """NAME's definition: from its `template <…>` line (if any) or the line naming it, to the closing brace at column 0."""
    m = re.search(r"^(?:template\s*<[^\n]*>\s*\n)?(?:__global__|__device__)[^\n(]*\b" + re.escape(name) + r"\s*\(",
                  source, re.M)
    if not m:
        raise SystemExit(f"{name} not found")
    end = source.find("\n}", m.start())
    return source[m.start():end + 2] + "\n"
