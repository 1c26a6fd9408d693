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

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TYPES = {1: "ERROR", 2: "WARN", 3: "INFO", 4: "LOG"}


class Server:
    def __init__(self, binary: str, root: Path):
        env = dict(os.environ, KERNELPRO_LOG=os.environ.get("KERNELPRO_LOG", "debug"))
        self.proc = subprocess.Popen([binary, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.messages: "queue.Queue[tuple[float, dict]]" = queue.Queue()
        self.lock = threading.Lock()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(),
            "capabilities": {"window": {"workDoneProgress": True}},
            "initializationOptions": {"trusted": True},
            "workspaceFolders": [{"uri": root.as_uri(), "name": "kernelpro"}],
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
            if "id" in msg and "method" in msg:  # a request of the server's: answered at once
                result = [None] if msg["method"] == "workspace/configuration" else None
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            self.messages.put((time.monotonic(), msg))

    def request(self, method: str, params) -> None:
        """Sends a request and waits for its answer (messages before it are dropped)."""
        rid = self.next_id
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            _, msg = self.messages.get(timeout=60)
            if msg.get("id") == rid and "method" not in msg:
                return

    def notify(self, method: str, params) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def until_progress_ends(self, timeout: float) -> list[tuple[float, dict]]:
        """Every message up to the end of the next work-done progress (the analysis), then 0.5 s more."""
        seen, deadline, ended = [], time.monotonic() + timeout, None
        while time.monotonic() < (ended + 0.5 if ended else deadline):
            try:
                at, msg = self.messages.get(timeout=0.1)
            except queue.Empty:
                continue
            seen.append((at, msg))
            if msg.get("method") == "$/progress" and msg["params"]["value"].get("kind") == "end" and not ended:
                ended = time.monotonic()
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
    server = Server(binary, ROOT)
    opened = time.monotonic()
    server.notify("textDocument/didOpen",
                  {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": text}})
    for line in logs(server.until_progress_ends(120), opened):
        print("open:", line, file=sys.stderr)
    edited = text + f"// saved by scripts/trace_save.py at {time.time():.0f}\n"
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": edited}]})
    saved = time.monotonic()
    server.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": edited})
    for line in logs(server.until_progress_ends(120), saved):
        print(line)
    server.request("shutdown", None)
    server.notify("exit", None)
    server.proc.wait(timeout=10)


if __name__ == "__main__":
    main()
