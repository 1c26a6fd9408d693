#!/usr/bin/env python3
"""Save latency of the language server against bare nvcc, side by side.

    bench/save_latency.py [--kernelpro BIN] [--reps N] [--arch sm_90] [-I DIR ...] [--out RAW.tsv] [FILE.cu ...]

For each fixture and repetition, on the same text (a comment line changes per
repetition, so neither nvcc nor the server's cache has seen it):

  nvcc   bare `nvcc -arch=ARCH -cubin -lineinfo -Xptxas -v -I<dir> [-I DIR ...] -o out.cubin -x cu FILE`,
         the command the server runs on save (`core/src/compile.rs`), in the file's folder;
  first  didSave → the first `publishDiagnostics` of that version (compiler messages
         and the kernel model's findings);
  all    didSave → the last publish before the analysis's work-done progress ends
         (SASS, resources, every static tool).

A FILE outside the repository (public code you fetched) is measured in place,
so its own includes resolve; -I folders go to nvcc and to the server's
`includePaths` alike. The server is the real binary over stdio (`kernelpro lsp`), trusted, one per
fixture, warmed by one save that is not counted. The two are interleaved per
repetition so both see the same machine load. Prints medians and the ratios
first/nvcc and all/nvcc; --out keeps every measurement (TSV).
"""

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FIXTURES = [
    "tests/fixtures/lsp/row_walk.cu",
    "tests/fixtures/naive/layernorm/layernorm_rowptr.cu",
    "tests/fixtures/naive/matmul/expert_sgemm_tile64_reg4x4.cu",
    "tests/fixtures/naive/softmax/softmax_template_grid.cu",
    "tests/fixtures/h200-probe/kernels.cu",
]


class Server:
    """The real binary over stdio; a reader thread answers the server's requests at once."""

    def __init__(self, binary: str, root: Path, arch: str | None, includes: list[str], options: dict | None = None,
                 env: dict | None = None, log_path: str | None = None):
        self.proc = subprocess.Popen([binary, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        # The server's log (window/logMessage), each line with the bench's clock: where a save's time goes.
        self.log = open(log_path, "a") if log_path else None
        self.messages: "queue.Queue[tuple[float, dict]]" = queue.Queue()
        self.lock = threading.Lock()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(),
            "capabilities": {"window": {"workDoneProgress": True}},
            "initializationOptions": {"trusted": True, **({"arch": arch} if arch else {}), "includePaths": includes,
                                      **(options or {})},
            "workspaceFolders": [{"uri": root.as_uri(), "name": "bench"}],
        })
        self.notify("initialized", {})

    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        with self.lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            now = time.perf_counter()
            if self.log and msg.get("method") == "window/logMessage":
                self.log.write(f"{now:.3f} {msg['params'].get('message', '')}\n")
                self.log.flush()
            if "id" in msg and "method" in msg:  # a request to the client: answer now
                result = [None] if msg["method"] == "workspace/configuration" else None
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            self.messages.put((now, msg))

    def notify(self, method: str, params: dict) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params) -> dict:
        rid = self.next_id
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == rid and "method" not in m)[1]

    def wait(self, pred, timeout: float = 300.0) -> tuple[float, dict]:
        deadline = time.perf_counter() + timeout
        while True:
            t, msg = self.messages.get(timeout=max(0.01, deadline - time.perf_counter()))
            if pred(msg):
                return t, msg

    def save(self, uri: str, text: str, version: int) -> tuple[float, float, int, int]:
        """(seconds to the first publish of `version`, seconds to the settled one, findings in each)."""
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})
        start = time.perf_counter()
        self.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": text})
        return self._settle(uri, version, start)

    def _settle(self, uri: str, version: int, start: float) -> tuple[float, float, int, int]:
        first = last = None
        prefix = f"kernelpro-analysis:{uri}#"
        while True:
            t, msg = self.wait(lambda m: m.get("method") in ("textDocument/publishDiagnostics", "$/progress"))
            p = msg["params"]
            if msg["method"] == "textDocument/publishDiagnostics":
                if p["uri"] == uri and p.get("version") == version:
                    last = (t, len(p["diagnostics"]))
                    first = first or last
            elif str(p.get("token", "")).startswith(prefix) and p["value"]["kind"] == "end" and last:
                return first[0] - start, last[0] - start, first[1], last[1]

    def open(self, uri: str, text: str) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1,
                                                              "text": text}})
        self._settle(uri, 1, time.perf_counter())

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()


def nvcc_path() -> str:
    for cand in [os.environ.get("KERNELPRO_NVCC"),
                 os.environ.get("CUDA_HOME") and os.path.join(os.environ["CUDA_HOME"], "bin/nvcc"),
                 shutil.which("nvcc")]:
        if cand and os.path.exists(cand):
            return cand
    venv = Path(os.environ.get("KERNELPRO_VENV", ROOT / ".venv"))
    found = sorted(venv.glob("lib/python*/site-packages/nvidia/cu*/bin/nvcc"))
    if found:
        return str(found[-1])
    sys.exit("nvcc not found: set KERNELPRO_NVCC or KERNELPRO_VENV")


def bare_nvcc(nvcc: str, arch: str, path: Path, includes: list[str]) -> float:
    out = Path(tempfile.gettempdir()) / f"kp-bench-bare-{os.getpid()}.cubin"
    argv = [nvcc, f"-arch={arch}", "-cubin", "-lineinfo", "-Xptxas", "-v", f"-I{path.parent}"]
    argv += [f"-I{i}" for i in includes] + ["-o", str(out), "-x", "cu", str(path)]
    start = time.perf_counter()
    subprocess.run(argv, cwd=path.parent, capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fixtures", nargs="*", default=DEFAULT_FIXTURES)
    ap.add_argument("--kernelpro", default=str(ROOT / "target/debug/kernelpro"))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", type=Path, help="every measurement, as TSV")
    ap.add_argument("-I", dest="include", action="append", default=[], help="include folder (repeatable)")
    args = ap.parse_args()
    nvcc = nvcc_path()
    os.environ.setdefault("KERNELPRO_NVCC", nvcc)
    raw = ["fixture\trep\tnvcc_s\tfirst_s\tall_s\tfirst_findings\tall_findings"]
    summary = []
    includes = [str(Path(i).resolve()) for i in args.include]
    for fixture in args.fixtures:
        given = Path(fixture) if Path(fixture).is_absolute() else ROOT / fixture
        source = given.read_text()
        with tempfile.TemporaryDirectory(prefix="kp-bench-") as tmp:
            # A repository fixture is copied out; public code stays beside its includes.
            in_repo = given.resolve().is_relative_to(ROOT)
            path = Path(tmp) / given.name if in_repo else given.with_name(f".kp-bench-{given.name}")
            uri = path.as_uri()
            path.write_text(source)
            server = Server(args.kernelpro, path.parent, args.arch, includes)
            server.open(uri, source)
            rows = []
            for rep in range(args.reps + 1):  # rep 0 warms both up and is not counted
                text = f"{source}\n// bench {rep} {time.time_ns()}\n"
                path.write_text(text)
                t_nvcc = bare_nvcc(nvcc, args.arch, path, includes)
                t_first, t_all, n_first, n_all = server.save(uri, text, rep + 2)
                if rep:
                    rows.append((t_nvcc, t_first, t_all))
                    raw.append(f"{fixture}\t{rep}\t{t_nvcc:.4f}\t{t_first:.4f}\t{t_all:.4f}\t{n_first}\t{n_all}")
            server.close()
            if not in_repo:
                path.unlink()
        med = [statistics.median(c) for c in zip(*rows)]
        summary.append((fixture, *med, n_first, n_all))
    width = max(52, *(len(f) for f, *_ in summary))
    print(f"{'fixture':{width}} {'nvcc s':>7} {'first s':>8} {'all s':>7} {'first/nvcc':>10} {'all/nvcc':>9} "
          f"{'findings first/all':>18}")
    for fixture, n, f, a, nf, na in summary:
        print(f"{fixture:{width}} {n:7.3f} {f:8.3f} {a:7.3f} {f / n:10.2f} {a / n:9.2f} {f'{nf}/{na}':>18}")
    gm = lambda xs: statistics.geometric_mean(xs)
    print(f"{'geometric mean of the ratios':{width}} {'':7} {'':8} {'':7} "
          f"{gm([f / n for _, n, f, _, _, _ in summary]):10.2f} {gm([a / n for _, n, _, a, _, _ in summary]):9.2f}")
    if args.out:
        args.out.write_text("\n".join(raw) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
