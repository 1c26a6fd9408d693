"""Reading kernels from a repository the user fetched (never committed) and writing task files, shared by
the task makers (fetch_corpus.py, leetcuda.py, llmc.py): one extractor of a kernel's definition, one writer."""
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


def task_file(header, prelude, helpers, spec, kernel):
    """A task file's text: the header lines (what the source is), the prelude (ours: includes, constants,
    macros), the device helpers (verbatim), the spec with its `// torch:` line (ours) directly above the
    kernel (verbatim)."""
    out = "\n".join(header) + "\n" + prelude
    for h in helpers:
        out += "\n" + h
    return out + "\n" + spec.strip("\n") + "\n" + kernel
