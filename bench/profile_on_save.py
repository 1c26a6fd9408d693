#!/usr/bin/env python3
"""Profile-on-save latency: how long after a save's compile diagnostics the profile lands.

    bench/profile_on_save.py [--kernelpro BIN] [--backend auto|cupti|ncu] [--reps N] [--out RAW.tsv] FILE.cu[:KERNEL] ...

The real server over stdio (`kernelpro lsp`), trusted, `profileOnSave` on, one per file,
warmed by one save that is not counted. Per save: `first` = didSave → the first
publishDiagnostics of that version (the compile's); `profile` = that publish → the end of
the profile's work-done progress (`kernelpro-profile-…`). Needs a GPU and ncu.
Prints medians per file; --out keeps every measurement (TSV); --log keeps the server's debug log.

Each save changes the text: a comment at the end, or with `FILE.cu:KERNEL` (a program with its
own main()) a statement in KERNEL's body, the save of a user who edits one kernel: the program's
other kernels keep their last profile (they did not change) and only KERNEL is measured. The
warm-up save, the document's first, measures every kernel; its latency is printed too.
"""
import re
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from save_latency import ROOT, Server  # noqa: E402


class ProfilingServer(Server):
    def __init__(self, binary, root, arch, backend="auto", log_path=None):
        env = {**os.environ, "KERNELPRO_LOG": "debug"} if log_path else None
        super().__init__(binary, root, arch, [], {"profileOnSave": True, "profileBackend": backend}, env=env,
                         log_path=log_path)

    def save_and_profile(self, uri, text, version):
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})
        start = time.perf_counter()
        self.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": text})
        first = None
        prefix = f"kernelpro-profile-{uri}"
        while True:
            t, msg = self.wait(lambda m: m.get("method") in ("textDocument/publishDiagnostics", "$/progress"),
                               timeout=600)
            p = msg["params"]
            if msg["method"] == "textDocument/publishDiagnostics":
                if p["uri"] == uri and p.get("version") == version and first is None:
                    first = t
            elif str(p.get("token", "")).startswith(prefix) and p["value"]["kind"] == "end" and first:
                return first - start, t - first, p["value"].get("message", "")


def edited(source, kernel, rep):
    """The text of save `rep`: a comment appended, or a statement added at the top of `kernel`'s body."""
    if not kernel:
        return f"{source}\n// bench {rep} {time.time_ns()}\n"
    m = re.search(r"__global__\s+void\s+" + re.escape(kernel) + r"\s*\([^)]*\)\s*\{", source)
    if not m:
        sys.exit(f"no kernel {kernel} in the file")
    return f"{source[:m.end()]} (void){rep + 1};{source[m.end():]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--kernelpro", default=str(ROOT / "target/debug/kernelpro"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--backend", default="auto", help="profileBackend: auto, cupti or ncu")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--log", help="append the server's debug log (window/logMessage, on the bench's clock) here")
    args = ap.parse_args()
    raw = ["file\trep\tfirst_s\tprofile_after_compile_s\tmessage"]
    for spec in args.files:
        f, _, kernel = spec.partition(":")
        given = Path(f) if Path(f).is_absolute() else ROOT / f
        source = given.read_text()
        with tempfile.TemporaryDirectory(prefix="kp-pos-") as tmp:
            path = Path(tmp) / given.name
            path.write_text(source)
            uri = path.as_uri()
            server = ProfilingServer(args.kernelpro, path.parent, args.arch, args.backend, args.log)
            server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1,
                                                                    "text": source}})
            rows = []
            for rep in range(args.reps + 1):  # rep 0 warms up and is not counted
                text = edited(source, kernel, rep)
                path.write_text(text)
                if server.log:
                    server.log.write(f"{time.perf_counter():.3f} == {spec}: save {rep}\n")
                first, prof, message = server.save_and_profile(uri, text, rep + 2)
                if not rep:
                    print(f"{spec} ({args.backend}): the first save's profile (every kernel) lands {prof:.2f} s after the compile's diagnostics ({message})")
                    raw.append(f"{spec}\t0\t{first:.3f}\t{prof:.3f}\t{message}")
                if rep:
                    # A profile that failed (its message says "unavailable") landed nothing: not a latency.
                    if not message.startswith("unavailable"):
                        rows.append(prof)
                    raw.append(f"{spec}\t{rep}\t{first:.3f}\t{prof:.3f}\t{message}")
            server.close()
        failed = args.reps - len(rows)
        failures = f", {failed} failed" if failed else ""
        if rows:
            print(f"{spec} ({args.backend}): profile lands {statistics.median(rows):.2f} s after the compile's diagnostics (median of {len(rows)}{failures})")
        else:
            print(f"{spec} ({args.backend}): no profile landed ({failed} failed)")
    if args.out:
        args.out.write_text("\n".join(raw) + "\n")


if __name__ == "__main__":
    main()
