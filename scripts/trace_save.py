#!/usr/bin/env python3
"""The server's log of one save, as an editor shows it (docs/tracing.md).

    scripts/trace_save.py BIN FILE.cu > save.log

Starts `BIN lsp` with KERNELPRO_LOG=debug (trusted, the repository as its
workspace, so the project's .venv nvcc is found), opens FILE, waits for that
analysis to end, then edits a comment line (so neither nvcc nor the server's
cache has seen the text) and saves. Prints every `window/logMessage` the
server sent for the save, in order, each with the seconds since the didSave
as this client received it and the message type, as VS Code's output channel
or Neovim's lsp.log would show them. The open's lines go to stderr.
"""

import os
import queue
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from save_latency import ROOT, Server  # noqa: E402  (one LSP client for the scripts)

TYPES = {1: "ERROR", 2: "WARN", 3: "INFO", 4: "LOG"}


def until_progress_ends(server: Server, timeout: float) -> list[tuple[float, dict]]:
    """Every message up to the end of the next work-done progress (the analysis), then 0.5 s more."""
    seen, deadline, ended = [], time.perf_counter() + timeout, None
    while time.perf_counter() < (ended + 0.5 if ended else deadline):
        try:
            at, msg = server.messages.get(timeout=0.1)
        except queue.Empty:
            continue
        seen.append((at, msg))
        if msg.get("method") == "$/progress" and msg["params"]["value"].get("kind") == "end" and not ended:
            ended = time.perf_counter()
    if not ended:
        sys.exit(f"trace_save.py: the analysis did not end within {timeout} s")
    return seen


def logs(seen: list[tuple[float, dict]], since: float) -> list[str]:
    return [
        f"{at - since:7.3f}s [{TYPES.get(m['params']['type'], '?')}] {m['params']['message']}"
        for at, m in seen if m.get("method") == "window/logMessage"
    ]


def main() -> None:
    binary, file = sys.argv[1], Path(sys.argv[2]).resolve()
    uri, text = file.as_uri(), file.read_text()
    env = dict(os.environ, KERNELPRO_LOG=os.environ.get("KERNELPRO_LOG", "debug"))
    server = Server(binary, ROOT, None, [], env=env)
    opened = time.perf_counter()
    server.notify("textDocument/didOpen",
                  {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": text}})
    for line in logs(until_progress_ends(server, 120), opened):
        print("open:", line, file=sys.stderr)
    edited = text + f"// saved by scripts/trace_save.py at {time.time():.0f}\n"
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": edited}]})
    saved = time.perf_counter()
    server.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": edited})
    for line in logs(until_progress_ends(server, 120), saved):
        print(line)
    server.close()


if __name__ == "__main__":
    main()
