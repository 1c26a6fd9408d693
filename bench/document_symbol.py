#!/usr/bin/env python3
"""documentSymbol on 20,000 one-line kernels (1 MB, a 4.4 MB answer): the
issue-30 goal is 200 ms, for the first request after a change too.

A stdio LSP client; each request is timed from the request written to the
last byte of its answer read (the client's JSON parse is not counted). Per
round:
  - a one-line change in the middle (a comment line inserted above k10000,
    then removed again in the next round's second change), asked at once:
    the first request of the new version;
  - a one-line change at the top (a comment inserted on line 0: every
    symbol's range moves), asked at once;
  - the same version asked three more times (the answer kept per version);
  - a change asked 0.5 s later (as an editor asks after its debounce).
Every answer is checked: 20,000 symbols, k19999 on the line it is on.

Prints one line per round, then min / median / max per kind, with the
binary, the machine's cores, its load average before and after, and the
server's resident memory at the end.

Usage: bench/document_symbol.py target/release/kernelpro [ROUNDS] [--out FILE] [--log]
(--log: the server's own figures too, KERNELPRO_LOG=debug: how long each
answer took to build and whether its parse was incremental)
(raw output of the figures in docs/reliability.md: bench/results/document_symbol-*.txt)
"""
import json, os, platform, statistics, subprocess, sys, time

out_path = next((sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--out"), None)
args = [a for a in sys.argv[1:] if not a.startswith("--") and a != out_path]
log = "--log" in sys.argv
binary = args[0]
rounds = int(args[1]) if len(args) > 1 else 3
KERNELS = 20000
lines_out = []


def say(line):
    print(line, flush=True)
    lines_out.append(line)


def load():
    return open("/proc/loadavg").read().split()[0]


env = dict(os.environ, KERNELPRO_LOG="debug") if log else None
p = subprocess.Popen([binary, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
fd = p.stdout.fileno()
buf = b""


def send(msg):
    body = json.dumps(msg).encode()
    p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    p.stdin.flush()


def read_msg():
    """The next message's bytes and the time its last byte was read."""
    global buf
    while True:
        if b"\r\n\r\n" in buf:
            head, rest = buf.split(b"\r\n\r\n", 1)
            n = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
            if len(rest) >= n:
                buf = rest[n:]
                return rest[:n], time.perf_counter()
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise SystemExit("server closed")
        buf += chunk


def answer(id_):
    while True:
        body, last = read_msg()
        head, tail = body[:100], body[-100:]
        if b'"method"' not in head and (b'"id":%d,' % id_ in head or b'"id":%d}' % id_ in tail):
            return body, last
        if log and b"documentSymbol answer built" in body:
            say("  server: " + json.loads(body)["params"]["message"])


nid = 0


def request(method, params):
    global nid
    nid += 1
    send({"jsonrpc": "2.0", "id": nid, "method": method, "params": params})
    return nid


uri = "file:///bench/big.cu"
version = 1
last_line = KERNELS - 1  # the line k19999 is on


def change(line, end_line, text):
    global version
    version += 1
    rng = {"start": {"line": line, "character": 0}, "end": {"line": end_line, "character": 0}}
    send({"jsonrpc": "2.0", "method": "textDocument/didChange",
          "params": {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"range": rng, "text": text}]}})


def symbols():
    t0 = time.perf_counter()
    i = request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    body, last = answer(i)
    r = json.loads(body)["result"]
    assert len(r) == KERNELS, len(r)
    assert (r[-1]["name"], r[-1]["range"]["start"]["line"]) == ("k19999", last_line), r[-1]
    return (last - t0) * 1e3


say(f"documentSymbol on {KERNELS} kernels; binary {os.path.abspath(binary)} "
    f"(built {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(os.path.getmtime(binary)))}); "
    f"{platform.node()}, {os.cpu_count()} cores, load average {load()} at the start; "
    f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
t = request("initialize", {"processId": None, "rootUri": None, "capabilities": {}, "initializationOptions": {}})
answer(t)
send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
big = "".join(f"__global__ void k{i}(float* y) {{ y[{i}] = {i}.0f; }}\n" for i in range(KERNELS))
send({"jsonrpc": "2.0", "method": "textDocument/didOpen",
      "params": {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": big}}})
time.sleep(3)  # the open's own analysis and the first (whole) parse
say(f"first request after the open: {symbols():.0f} ms")
kinds = {"middle": [], "top": [], "same": [], "later": []}
inserted = False
for r in range(rounds):
    # One line in the middle: inserted above k10000, or the one inserted before removed.
    if inserted:
        change(10000, 10001, "")
        last_line -= 1
    else:
        change(10000, 10000, f"// middle {version}\n")
        last_line += 1
    inserted = not inserted
    middle = symbols()
    change(0, 0, f"// top {version}\n")
    last_line += 1
    top = symbols()
    same = [symbols() for _ in range(3)]
    change(0, 1, "")  # the top comment removed
    last_line -= 1
    time.sleep(0.5)
    later = symbols()
    kinds["middle"].append(middle)
    kinds["top"].append(top)
    kinds["same"].extend(same)
    kinds["later"].append(later)
    say(f"round {r}: first after a one-line change in the middle {middle:.0f} ms, at the top {top:.0f} ms; "
        f"same version {', '.join(f'{s:.0f}' for s in same)} ms; 0.5 s after a change {later:.0f} ms")
names = {"middle": "first request after a one-line change (middle)", "top": "first request after a one-line change (top)",
         "same": "repeated request, same version", "later": "request 0.5 s after a change"}
for k, v in kinds.items():
    say(f"{names[k]}: min {min(v):.0f}, median {statistics.median(v):.0f}, max {max(v):.0f} ms ({len(v)} requests)")
rss = next(l.split()[1] for l in open(f"/proc/{p.pid}/status") if l.startswith("VmRSS:"))
say(f"load average {load()} at the end; the server's resident memory {int(rss) // 1024} MiB")
i = request("shutdown", None)
answer(i)
send({"jsonrpc": "2.0", "method": "exit"})
p.wait(10)
if out_path:
    with open(out_path, "w") as f:
        f.write("\n".join(lines_out) + "\n")
