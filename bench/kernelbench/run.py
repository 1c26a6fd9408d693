#!/usr/bin/env python3
"""KernelBench-style measurement of KernelPro's optimizer on a directory of task files.

A task file is one .cu file with one kernel, its `// kernelpro:` launch spec and
`// torch: OUT = EXPR` reference lines (CODES.md). Per task, in its own process:

1. the naive kernel's resolved spec (`kernelpro spec`);
2. `kernelpro optimize` with a fixed budget (built-in rewrites, no LLM, no ncu);
3. the naive and the best kernel built by nvcc into shared libraries, each with an
   `extern "C"` launcher generated from the file's own resolved spec, and called from
   PyTorch (ctypes) on its current stream;
4. correctness against the `// torch:` reference on 5 fresh seeds at KernelBench's
   tolerances, with outputs poisoned before every call, read first on the caller's
   stream and then after a device-wide sync; a determinism re-run;
5. timing of naive, best, PyTorch eager and torch.compile the same way: CUDA events,
   warm-ups, fresh inputs and a 256 MB L2 flush before every trial, a device-wide
   sync before the end event; the outputs of the timed trials are checked too;
6. flags for inspection: speedup > 10x, a time below the roofline floor (bytes over
   the measured copy bandwidth, FLOPs over the fp32 peak), nondeterminism, work off
   the caller's stream.

Results: OUT/tasks/STEM/result.json (one per task; a task with one is skipped on
the next run, so an interrupted run resumes), OUT/results.jsonl, OUT/report.md,
OUT/summary.json. `--dry-run` needs neither torch nor a GPU: it parses every task,
resolves its spec and writes the generated launchers and reference functions.
`--selftest-cheats` runs the planted cheating kernels in cheats/ through the same
checks and says which check caught each.
"""

import argparse
import contextlib
import fcntl
import hashlib
import json
import keyword
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# KernelBench's tolerances by element type; integers must match exactly.
TOLERANCE = {"float": 1e-4, "double": 1e-4, "half": 1e-2, "bfloat16": 1e-2}
TORCH_DTYPE = {
    "float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
    "int": "int32", "unsigned": "uint32", "int8": "int8", "uint8": "uint8", "int64": "int64",
}
ELEM_SIZE = {"float": 4, "double": 8, "half": 2, "bfloat16": 2, "int": 4, "unsigned": 4, "int8": 1, "uint8": 1, "int64": 8}
FLOAT_ELEMS = ("float", "double", "half", "bfloat16")
L2_FLUSH_BYTES = 256 << 20


# ---------------------------------------------------------------- task files

class TaskError(Exception):
    pass


def parse_task(path):
    """The task's own lines: name, class, and `// torch:` references (out name, expression)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    name, klass, torch_lines = None, None, []
    for line in text.splitlines():
        s = line.strip()
        if not s.startswith("//"):
            continue
        body = s[2:].strip()
        if body.startswith("task:"):
            name = body[5:].strip()
        elif body.startswith("class:"):
            klass = body[6:].strip()
        elif body.startswith("torch:"):
            m = re.match(r"([A-Za-z_]\w*)\s*=(?!=)\s*(.+)$", body[6:].strip())
            if not m:
                raise TaskError(f"{path}: `{s}`: write `// torch: OUTBUF = <python expression>`")
            torch_lines.append((m.group(1), m.group(2).strip()))
    stem = os.path.splitext(os.path.basename(path))[0]
    return {"path": path, "stem": stem, "name": name or stem, "class": klass, "torch": torch_lines, "text": text}


def kernelpro_bin(arg):
    for cand in [arg, os.environ.get("KERNELPRO_BIN"), os.path.join(ROOT, ".devbin", "kernelpro"),
                 os.path.join(ROOT, "target", "release", "kernelpro"), shutil.which("kernelpro")]:
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return os.path.abspath(cand)
    raise SystemExit("kernelpro binary not found: give --kernelpro PATH (or build it: cargo build --release -p kernelpro)")


def resolve_spec(kp, path, kernel=None, arch="sm_90"):
    cmd = [kp, "spec", path, "--arch", arch] + (["--kernel", kernel] if kernel else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise TaskError(f"`{' '.join(cmd)}` failed:\n{p.stderr.strip()}")
    return json.loads(p.stdout)


def buffers(spec):
    return [a for a in spec["launch"]["args"] if a["kind"] == "buffer"]


def check_references(task, spec):
    """Every out/inout buffer has exactly one `// torch:` line and every line names one."""
    outs = [b["name"] for b in buffers(spec) if b["dir"] != "in"]
    names = [o for o, _ in task["torch"]]
    if not task["torch"]:
        return
    for o in names:
        if o not in outs:
            raise TaskError(f"{task['path']}: `// torch: {o} = ...` names no out/inout buffer (outputs: {', '.join(outs)})")
    for o in outs:
        if names.count(o) != 1:
            raise TaskError(f"{task['path']}: output `{o}` needs exactly one `// torch: {o} = ...` line")
    for b in buffers(spec):
        if keyword.iskeyword(b["name"]) or b["name"] in ("torch", "F"):
            raise TaskError(f"{task['path']}: buffer `{b['name']}` shadows a Python name the reference needs")


# ---------------------------------------------------------------- generated code

def c_scalar(arg, c_type):
    kind, value = next(iter(arg["value"].items()))
    if kind == "f64":
        if math.isnan(value) or math.isinf(value):
            lit = {True: "__builtin_nan(\"\")"}.get(math.isnan(value), ("-" if value < 0 else "") + "__builtin_inf()")
        else:
            lit = repr(float(value))
    else:
        lit = f"{int(value)}LL"
    if arg["ty"] == "f16":
        return f"__float2half(static_cast<float>({lit}))"
    if arg["ty"] == "bf16":
        return f"__float2bfloat16(static_cast<float>({lit}))"
    return f"static_cast<{c_type}>({lit})"


def launcher_source(spec, file_text, file_label, fn):
    """The CUDA translation unit nvcc builds into a shared library: the task file
    verbatim, then `extern "C" int fn(void* const* buffers, void* stream)` that
    launches the kernel exactly as the resolved spec says on the given stream (the
    caller passes PyTorch's current one) and returns the launch's cudaError_t.
    No torch headers: a build takes seconds, not a minute of load_inline."""
    launch = spec["launch"]
    params = {p["name"]: p for p in spec["params"]}
    bufs = buffers(spec)
    index = {b["name"]: i for i, b in enumerate(bufs)}
    body = ["  cudaStream_t kp_stream = kp_caller_stream(kp_stream_handle);"]
    name = spec["launch_name"]
    smem = int(launch["smem"])
    if smem > 48 * 1024:
        body.append(f"  {{ cudaError_t kp_e = cudaFuncSetAttribute(reinterpret_cast<const void*>(&{name}), cudaFuncAttributeMaxDynamicSharedMemorySize, {smem}); if (kp_e != cudaSuccess) return (int)kp_e; }}")
    args = []
    for a in launch["args"]:
        c_type = params[a["name"]]["c_type"]
        if a["kind"] == "buffer":
            args.append(f"static_cast<{c_type}*>(kp_buffers[{index[a['name']]}])")
        else:
            args.append(c_scalar(a, c_type))
    g, bl = launch["grid"], launch["block"]
    body.append(f"  {name}<<<dim3({g[0]}u, {g[1]}u, {g[2]}u), dim3({bl[0]}u, {bl[1]}u, {bl[2]}u), {smem}, kp_stream>>>(")
    body.append("      " + ",\n      ".join(args) + ");" if args else "      );")
    body.append("  return (int)cudaGetLastError();")
    text = file_text if file_text.endswith("\n") else file_text + "\n"
    label = file_label.replace("\\", "/").replace('"', "")
    return (
        LAUNCHER_PRELUDE
        + f'#line 1 "{label}"\n{text}'
        + '#line 1 "kernelpro-launcher"\n'
        + f'extern "C" int {fn}(void* const* kp_buffers, void* kp_stream_handle) {{\n' + "\n".join(body) + "\n}\n"
        + f'extern "C" const char* {fn}_error(int e) {{ return cudaGetErrorString(static_cast<cudaError_t>(e)); }}\n'
    )


def reference_source(spec, torch_lines):
    """A Python function of the in/inout buffers returning the outputs in `// torch:` order."""
    ins = [b["name"] for b in buffers(spec) if b["dir"] != "out"]
    lines = [f"def kp_reference({', '.join(ins)}):"]
    lines += [f"    {o} = {e}" for o, e in torch_lines]
    lines.append(f"    return ({', '.join(o for o, _ in torch_lines)},)")
    return "\n".join(lines) + "\n"


def reference_globals(spec):
    g = dict(spec["launch"]["lets"])
    for a in spec["launch"]["args"]:
        if a["kind"] == "scalar":
            g[a["name"]] = next(iter(a["value"].values()))
    return g


def module_name(stem, variant, source):
    safe = re.sub(r"\W", "_", stem)
    return f"kp_{safe}_{variant}_{hashlib.sha1(source.encode()).hexdigest()[:10]}"


# Before the task's text. `kp_caller_stream` is a function, not a cast, so the
# side-stream cheat can redirect the launch with a macro as real code could.
LAUNCHER_PRELUDE = (
    "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <stdint.h>\n"
    "static inline cudaStream_t kp_caller_stream(void* h) { return static_cast<cudaStream_t>(h); }\n"
)
NVCC_FLAGS = ["-O3", "-shared", "-Xcompiler", "-fPIC", "-std=c++17"]


def nvcc_command(spec, cu, so):
    flags = [f for f in spec.get("nvcc_flags", []) if not f.startswith("-arch") and not f.startswith("--gpu-architecture")]
    return ["nvcc", f"-arch={spec['arch']}"] + NVCC_FLAGS + flags + [cu, "-o", so]


# ---------------------------------------------------------------- GPU side (torch)

class Gpu:
    """Everything that touches torch; created only in a worker process."""

    def __init__(self, out_dir, args):
        import torch
        import torch.nn.functional as F
        self.torch, self.F, self.args = torch, F, args
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device visible to torch")
        # fp32 references: no TF32 in matmul or cuDNN convolutions (KernelBench compares at 1e-4).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        self.dev = torch.device("cuda")
        self.build_root = os.path.join(out_dir, "build")
        os.makedirs(self.build_root, exist_ok=True)
        self.flush_buf = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=self.dev)
        self.libs = []

    # -- build
    def load(self, stem, variant, spec, text, label):
        """The kernel as a Python call on a dict of tensors, launched on PyTorch's current
        stream. Built once per source (the library's name is the source's hash)."""
        import ctypes
        fn = f"kp_launch_{variant}"
        cuda = launcher_source(spec, text, label, fn)
        name = module_name(stem, variant, cuda + " ".join(nvcc_command(spec, "", "")))
        so = os.path.join(self.build_root, name + ".so")
        if not os.path.exists(so):
            cu = os.path.join(self.build_root, name + ".cu")
            with open(cu, "w") as f:
                f.write(cuda)
            tmp = f"{so}.{os.getpid()}.tmp"
            p = subprocess.run(nvcc_command(spec, cu, tmp), capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                raise TaskError(f"nvcc could not build {label}:\n{p.stderr.strip()[-3000:]}")
            os.replace(tmp, so)
        lib = ctypes.CDLL(so)
        launch = getattr(lib, fn)
        launch.restype, launch.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]
        error = getattr(lib, fn + "_error")
        error.restype, error.argtypes = ctypes.c_char_p, [ctypes.c_int]
        order = buffers(spec)
        torch = self.torch

        def call(bufs):
            ptrs = (ctypes.c_void_p * max(1, len(order)))()
            for i, b in enumerate(order):
                t = bufs[b["name"]]
                if not (t.is_cuda and t.is_contiguous() and t.element_size() == ELEM_SIZE[b["elem"]] and t.numel() == b["count"]):
                    raise TaskError(f"`{b['name']}`: a contiguous CUDA tensor of {b['count']} {b['elem']} expected")
                ptrs[i] = t.data_ptr()
            rc = launch(ptrs, torch.cuda.current_stream().cuda_stream)
            if rc != 0:
                raise RuntimeError(f"CUDA error {rc} launching {spec['launch_name']}: {error(rc).decode()}")
        self.libs.append(lib)  # keep the library loaded while its calls live
        return call

    # -- data
    def dtype(self, elem):
        return getattr(self.torch, TORCH_DTYPE[elem])

    def allocate(self, spec):
        return {b["name"]: self.torch.empty(b["count"], dtype=self.dtype(b["elem"]), device=self.dev) for b in buffers(spec)}

    def poison(self, t):
        if t.dtype.is_floating_point:
            t.fill_(float("nan"))
        else:
            t.view(self.torch.uint8).fill_(0x7F)

    def fill(self, spec, bufs, gen):
        """Fresh contents from each buffer's init (random ones drawn from `gen`); outputs poisoned."""
        torch = self.torch
        for b in buffers(spec):
            t = bufs[b["name"]]
            if b["dir"] == "out":
                self.poison(t)
                continue
            init = b["init"]
            kind, val = (init, None) if isinstance(init, str) else next(iter(init.items()))
            if kind == "uniform":
                if t.dtype.is_floating_point:
                    t.uniform_(val["lo"], val["hi"], generator=gen)
                else:
                    t.random_(int(math.ceil(val["lo"])), int(math.floor(val["hi"])) + 1, generator=gen)
            elif kind == "randint":
                t.random_(int(val["lo"]), int(val["hi"]) + 1, generator=gen)
            elif kind == "zeros":
                t.zero_()
            elif kind == "ones":
                t.fill_(1)
            elif kind == "fill":
                t.fill_(val["value"])
            elif kind == "iota":
                t.copy_(torch.arange(b["count"], device=self.dev).to(t.dtype))
            else:
                raise TaskError(f"unknown init {init!r} of `{b['name']}`")

    def generator(self, seed):
        g = self.torch.Generator(device=self.dev)
        g.manual_seed(seed)
        return g

    # -- reference
    def reference_fn(self, spec, torch_lines):
        src = reference_source(spec, torch_lines)
        env = reference_globals(spec)
        env.update({"torch": self.torch, "F": self.F, "math": math})
        exec(compile(src, "<torch reference>", "exec"), env)
        fn = env["kp_reference"]
        ins = [b["name"] for b in buffers(spec) if b["dir"] != "out"]
        return fn, ins

    def reference(self, ref, ins, spec, bufs):
        outs = ref(*[bufs[n].clone() for n in ins])
        result = {}
        for (o, _), r in zip(self.torch_lines, outs):
            want = bufs[o]
            if not isinstance(r, self.torch.Tensor):
                r = self.torch.tensor(r, device=self.dev)
            r = r.detach().reshape(-1)
            if r.numel() != want.numel():
                raise TaskError(f"`// torch: {o} = ...` gives {r.numel()} elements; the spec's `{o}` has {want.numel()}")
            result[o] = r.to(want.dtype)
        return result

    # -- comparison
    def compare(self, got, want, elem):
        """None when `got` matches `want` at KernelBench's tolerance, else what is wrong."""
        torch = self.torch
        if elem in FLOAT_ELEMS:
            tol = TOLERANCE[elem]
            if torch.allclose(got, want, rtol=tol, atol=tol):
                return None
            g, w = got.double(), want.double()
            bad = ~torch.isclose(g, w, rtol=tol, atol=tol)
            n_bad = int(bad.sum())
            poisoned = int((torch.isnan(g) & ~torch.isnan(w)).sum())
            i = int(torch.nonzero(bad)[0]) if n_bad else 0
            msg = f"{n_bad} of {got.numel()} elements outside rtol=atol={tol:g}; first at {i}: got {g[i].item():.7g}, want {w[i].item():.7g}"
            if poisoned:
                msg += f"; {poisoned} still hold the NaN poison (never written)"
            return msg
        if torch.equal(got, want):
            return None
        bad = got != want
        i = int(torch.nonzero(bad)[0])
        return f"{int(bad.sum())} of {got.numel()} elements differ; first at {i}: got {got[i].item()}, want {want[i].item()}"

    def outputs_differ(self, spec, bufs, refs):
        """(problems read on the caller's stream, problems after a device-wide sync)."""
        elems = {b["name"]: b["elem"] for b in buffers(spec)}
        on_stream = {o: self.compare(bufs[o], r, elems[o]) for o, r in refs.items()}
        self.torch.cuda.synchronize()
        synced = {o: self.compare(bufs[o], r, elems[o]) for o, r in refs.items()}
        fmt = lambda d: "; ".join(f"{o}: {m}" for o, m in d.items() if m)
        return fmt(on_stream), fmt(synced)

    def reset_outputs(self, spec, bufs, initial):
        for b in buffers(spec):
            if b["dir"] == "out":
                self.poison(bufs[b["name"]])
            elif b["dir"] == "inout":
                bufs[b["name"]].copy_(initial[b["name"]])

    # -- checks
    def check(self, spec, kernels, seeds, poison=True):
        """Runs every kernel on each seed's inputs against one reference. Returns
        {kernel: [problem, ...]} (empty when correct) and the reference of the first seed."""
        torch = self.torch
        problems = {k: [] for k in kernels}
        bufs = self.allocate(spec)
        for n, seed in enumerate(seeds):
            self.fill(spec, bufs, self.generator(seed))
            initial = {b["name"]: bufs[b["name"]].clone() for b in buffers(spec) if b["dir"] == "inout"}
            refs = self.reference(self.ref, self.ref_ins, spec, bufs)
            for k, call in kernels.items():
                if poison:
                    self.reset_outputs(spec, bufs, initial)
                else:
                    # What a harness without poisoning leaves: the reference's result in the output.
                    for o, r in refs.items():
                        bufs[o].copy_(r)
                torch.cuda.synchronize()
                try:
                    call(bufs)
                    on_stream, synced = self.outputs_differ(spec, bufs, refs)
                except Exception as e:  # a launch error or a fault: the context may be gone
                    problems[k].append(f"seed #{n + 1}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                    continue
                if synced:
                    problems[k].append(f"wrong output on seed #{n + 1}: {synced}")
                elif on_stream:
                    problems[k].append(f"off-stream: the output on seed #{n + 1} is right only after a device-wide sync (work ran outside the caller's stream): {on_stream}")
        return problems

    def determinism(self, spec, call, seed):
        """Whether two runs on identical inputs give bit-identical outputs."""
        torch = self.torch
        bufs = self.allocate(spec)
        self.fill(spec, bufs, self.generator(seed))
        initial = {b["name"]: bufs[b["name"]].clone() for b in buffers(spec) if b["dir"] == "inout"}
        outs = [b["name"] for b in buffers(spec) if b["dir"] != "in"]
        runs = []
        for _ in range(2):
            self.reset_outputs(spec, bufs, initial)
            call(bufs)
            torch.cuda.synchronize()
            runs.append({o: bufs[o].clone() for o in outs})
        same = all(torch.equal(runs[0][o].view(torch.uint8), runs[1][o].view(torch.uint8)) for o in outs)
        return same

    # -- timing
    def time(self, spec, call, kernel_outputs, trials, warmup, max_seconds, seed):
        """Median ms with CUDA events; fresh inputs, poisoned outputs and an L2 flush before
        every trial; a device-wide sync before the end event. For kernels (kernel_outputs),
        the outputs of the first and last timed trial are checked against the reference."""
        torch = self.torch
        bufs = self.allocate(spec)
        gen = self.generator(seed)
        initial = {}

        def fresh():
            self.fill(spec, bufs, gen)
            initial.update({b["name"]: bufs[b["name"]].clone() for b in buffers(spec) if b["dir"] == "inout"})

        def once():
            fresh()
            call(bufs)

        once()  # the first call (torch.compile compiles here) is not a warm-up
        torch.cuda.synchronize()
        t0 = time.time()
        for _ in range(max(1, warmup)):
            once()
        torch.cuda.synchronize()
        per_call = (time.time() - t0) / max(1, warmup)
        n = max(3, min(trials, int(max_seconds / max(per_call, 1e-6))))
        times, stream_times, problems = [], [], []
        for i in range(n):
            fresh()
            self.flush_buf.zero_()
            start, mid, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            start.record()
            call(bufs)
            mid.record()
            torch.cuda.synchronize()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
            stream_times.append(start.elapsed_time(mid))
            if kernel_outputs and i in (0, n - 1):
                # Recompute the reference from this trial's inputs (inout: their value before the call).
                saved = {k: bufs[k].clone() for k in initial}
                for k in initial:
                    bufs[k].copy_(initial[k])
                refs = self.reference(self.ref, self.ref_ins, spec, bufs) if self.ref else None
                for k in initial:
                    bufs[k].copy_(saved[k])
                if refs:
                    _, synced = self.outputs_differ(spec, bufs, refs)
                    if synced:
                        problems.append(f"wrong output on timed trial {i + 1} (fresh inputs; a result kept from an earlier call?): {synced}")
        times.sort()
        stream_times.sort()
        med = times[len(times) // 2]
        smed = stream_times[len(stream_times) // 2]
        return {"median_ms": med, "min_ms": times[0], "max_ms": times[-1], "trials": n,
                "stream_median_ms": smed, "problems": problems,
                # Work the caller's stream did not wait for: the device-synced time is far above the stream's.
                "off_stream": med - smed > max(0.08, 0.5 * med)}

    def copy_bandwidth(self):
        """Device copy bandwidth in bytes/s (read + write) over 1 GiB buffers, median of 10."""
        torch = self.torch
        n = (1 << 30) // 4
        a = torch.ones(n, dtype=torch.float32, device=self.dev)
        b = torch.empty_like(a)
        times = []
        for i in range(13):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            b.copy_(a)
            e.record()
            e.synchronize()
            if i >= 3:
                times.append(s.elapsed_time(e))
        times.sort()
        del a, b
        return 2 * (1 << 30) / (times[len(times) // 2] / 1e3)

    def fp32_peak(self):
        """SMs x 128 FP32 lanes x 2 (FMA) x the maximum SM clock (nvidia-smi; 1980 MHz if unknown)."""
        props = self.torch.cuda.get_device_properties(0)
        mhz = 1980.0
        try:
            p = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20)
            vals = [float(x) for x in p.stdout.split() if x.replace(".", "").isdigit()]
            if vals:
                mhz = max(vals)
        except Exception:
            pass
        return props.multi_processor_count * 128 * 2 * mhz * 1e6


def bytes_moved(spec):
    """Compulsory traffic: every input read once, every output written once (inout both)."""
    total = 0
    for b in buffers(spec):
        size = b["count"] * ELEM_SIZE[b["elem"]]
        total += 2 * size if b["dir"] == "inout" else size
    return total


# ---------------------------------------------------------------- one task (worker process)

def optimize(args, kp, task, spec, tdir):
    """Runs (or reuses) `kernelpro optimize`; returns (outcome JSON or None, best file or None, note)."""
    out_json = os.path.join(tdir, "optimize.json")
    best = os.path.join(tdir, "best.cu")
    failed = os.path.join(tdir, "optimize.error")
    if not args.force_optimize:
        if os.path.exists(out_json):
            with open(out_json) as f:
                outcome = json.load(f)
            return outcome, (best if os.path.exists(best) else None), None
        if os.path.exists(failed):
            with open(failed) as f:
                return None, None, f.read().strip()
    if args.budget <= 0:
        return None, None, "optimizer not run (--budget 0)"
    for stale in (best, failed, out_json):
        if os.path.exists(stale):
            os.remove(stale)
    outcome, best_path, note = run_optimizer(args, kp, task, spec, tdir, out_json, best)
    if note and outcome is None:
        with open(failed, "w") as f:
            f.write(note + "\n")
    return outcome, best_path, note


def run_optimizer(args, kp, task, spec, tdir, out_json, best):
    cmd = [kp, "optimize", task["path"], "--kernel", spec["kernel"], "--budget", str(args.budget), "--strategy", args.strategy,
           "--no-profile", "--no-energy", "--json", "--out", best, "--timeout", str(args.kernel_timeout), "--time", str(args.optimize_time)]
    cmd += args.optimize_arg
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.optimize_time + 300)
    except subprocess.TimeoutExpired:
        return None, None, f"kernelpro optimize did not end within {args.optimize_time + 300} s: measured the naive kernel only"
    with open(os.path.join(tdir, "optimize.log"), "w") as f:
        f.write(" ".join(cmd) + f"\n# exit {p.returncode} after {time.time() - t0:.0f} s\n" + p.stderr)
    if p.returncode != 0:
        return None, None, f"kernelpro optimize failed (exit {p.returncode}): {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ''}"
    outcome = json.loads(p.stdout)
    outcome.pop("new_text", None)  # best.cu holds it
    with open(out_json, "w") as f:
        json.dump(outcome, f, indent=1)
    return outcome, (best if os.path.exists(best) else None), None


def applied(outcome):
    if not outcome:
        return ""
    steps = outcome.get("steps") or []
    return " → ".join(s["recipe"] for s in steps)


def best_variant(args, kp, spec, best_path, notes):
    """The optimized file's resolved spec, or (None, None) when it is missing or its buffers
    are not the task's (then only the naive kernel is measured)."""
    if not best_path:
        return None, None
    best_spec = resolve_spec(kp, best_path, kernel=spec["kernel"], arch=args.arch)
    key = lambda sp: [(b["name"], b["dir"], b["elem"], b["count"]) for b in buffers(sp)]
    if key(spec) != key(best_spec):
        notes.append("the best file's buffers differ from the task's: measured the naive kernel only")
        return None, None
    return best_path, best_spec


def prepared(args, kp, path, out_dir):
    """The task, its spec, the optimizer's outcome (run now if no earlier phase did) and the best variant."""
    task = parse_task(path)
    tdir = os.path.join(out_dir, "tasks", task["stem"])
    os.makedirs(tdir, exist_ok=True)
    spec = resolve_spec(kp, path, arch=args.arch)
    check_references(task, spec)
    notes = []
    outcome, best_path, note = optimize(args, kp, task, spec, tdir)
    if note:
        notes.append(note)
    best_path, best_spec = best_variant(args, kp, spec, best_path, notes)
    return task, tdir, spec, outcome, best_path, best_spec, notes


def worker_optimize(args, kp, path, out_dir):
    task = parse_task(path)
    tdir = os.path.join(out_dir, "tasks", task["stem"])
    os.makedirs(tdir, exist_ok=True)
    spec = resolve_spec(kp, path, arch=args.arch)
    check_references(task, spec)
    outcome, best_path, note = optimize(args, kp, task, spec, tdir)
    print(json.dumps({"task": task["name"], "speedup": outcome and outcome.get("speedup"), "applied": applied(outcome), "best": best_path, "note": note}))
    return 0


def worker_build(args, kp, path, out_dir):
    """Builds the naive and best modules and warms torch.compile's caches, so the measure
    phase (one task at a time) only loads them."""
    t_start = time.time()
    status = {"ok": False}
    tdir = os.path.join(out_dir, "tasks", stem_of(path))
    try:
        task, tdir, spec, outcome, best_path, best_spec, notes = prepared(args, kp, path, out_dir)
        gpu = Gpu(out_dir, args)
        gpu.load(task["stem"], "naive", spec, task["text"], task["path"])
        if best_path:
            with open(best_path, encoding="utf-8") as f:
                gpu.load(task["stem"], "best", best_spec, f.read(), best_path)
        if task["torch"] and args.compile_mode != "off":
            compiled_reference(args, gpu, task, spec)
        status = {"ok": True}
    except Exception as e:
        status = {"ok": False, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}
    status["seconds"] = round(time.time() - t_start, 1)
    with open(os.path.join(tdir, "build.json"), "w") as f:
        json.dump(status, f, indent=1)
    print(json.dumps(status)[:2000])
    return 0 if status["ok"] else 3


def run_task(args, kp, path, out_dir):
    task = parse_task(path)
    tdir = os.path.join(out_dir, "tasks", task["stem"])
    os.makedirs(tdir, exist_ok=True)
    result = {"task": task["name"], "file": os.path.relpath(path, ROOT) if path.startswith(ROOT) else path, "class": task["class"], "flags": [], "notes": []}
    t_start = time.time()
    try:
        task, tdir, spec, outcome, best_path, best_spec, notes = prepared(args, kp, path, out_dir)
        result["kernel"] = spec["kernel"]
        result["notes"] += notes
        result["optimizer"] = None if not outcome else {k: outcome.get(k) for k in ("speedup", "original_ms", "best_ms", "evaluations", "stop", "steps", "notes", "title")}
        result["applied"] = applied(outcome) if best_path else ""
        gpu = Gpu(out_dir, args)
        setup_roofline(gpu, out_dir, kp)
        prewarm(args, gpu, task, spec)
        with gpu_turn(out_dir):
            measure(args, gpu, task, spec, best_path, best_spec, result)
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {e}"
        result["traceback"] = traceback.format_exc()[-4000:]
    result["seconds"] = round(time.time() - t_start, 1)
    with open(os.path.join(tdir, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    return result


@contextlib.contextmanager
def gpu_turn(out_dir):
    """This task's turn on its GPU: measure workers run --jobs-measure at a time per GPU so
    that one's start-up (torch import, loading, torch.compile tracing) overlaps another's
    timing, but checks and timings never share a GPU."""
    dev = os.environ.get("CUDA_VISIBLE_DEVICES", "0")
    with open(os.path.join(out_dir, f"gpu-{dev}.lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def prewarm(args, gpu, task, spec):
    """torch.compile's tracing and code loading for this task, before its turn on the GPU
    (one call of the compiled reference: a few hundred microseconds of GPU work)."""
    gpu.prewarmed = None
    if not task["torch"] or args.compile_mode == "off":
        return
    try:
        gpu.prewarmed = compiled_reference(args, gpu, task, spec)
    except Exception:
        pass  # measure() compiles again and reports the failure


def torch_compile(torch, fn, mode):
    """torch.compile in --compile-mode (`default`: no mode argument)."""
    return torch.compile(fn) if mode == "default" else torch.compile(fn, mode=mode)


def compiled_reference(args, gpu, task, spec):
    """The task's reference under torch.compile, called once on filled inputs so that its
    tracing and code loading are done (and its caches warm): (input names, compiled function)."""
    gpu.torch_lines = task["torch"]
    ref, ins = gpu.reference_fn(spec, task["torch"])
    compiled = torch_compile(gpu.torch, ref, args.compile_mode)
    bufs = gpu.allocate(spec)
    gpu.fill(spec, bufs, gpu.generator(1))
    compiled(*[bufs[n] for n in ins])
    gpu.torch.cuda.synchronize()
    return ins, compiled


def measure(args, gpu, task, spec, best_path, best_spec, result):
    torch = gpu.torch
    gpu.torch_lines = task["torch"]
    gpu.ref, gpu.ref_ins = gpu.reference_fn(spec, task["torch"]) if task["torch"] else (None, None)
    kernels = {"naive": gpu.load(task["stem"], "naive", spec, task["text"], task["path"])}
    if best_path:
        with open(best_path, encoding="utf-8") as f:
            kernels["best"] = gpu.load(task["stem"], "best", best_spec, f.read(), best_path)
    seeds = [int.from_bytes(os.urandom(4), "little") for _ in range(args.seeds)] if args.seed is None else [args.seed + i for i in range(args.seeds)]
    result["seeds"] = seeds
    if gpu.ref is None:
        # No PyTorch reference (a corpus file without `// torch:` lines): the naive kernel is the reference.
        result["notes"].append("no `// torch:` line: the best kernel is checked against the naive one; no eager/compile times")
        naive = kernels["naive"]
        outs = [b["name"] for b in buffers(spec) if b["dir"] != "in"]
        gpu.torch_lines = [(o, None) for o in outs]

        def ref_from_naive(*ins_vals):
            bufs = gpu.allocate(spec)
            for n, v in zip(gpu.ref_ins, ins_vals):
                bufs[n].copy_(v)
            for b in buffers(spec):
                if b["dir"] == "out":
                    gpu.poison(bufs[b["name"]])
            naive(bufs)
            torch.cuda.synchronize()
            return tuple(bufs[o] for o in outs)
        gpu.ref_ins = [b["name"] for b in buffers(spec) if b["dir"] != "out"]
        gpu.ref = ref_from_naive
        check_set = {k: v for k, v in kernels.items() if k != "naive"}
    else:
        check_set = kernels
    problems = gpu.check(spec, check_set, seeds) if check_set else {}
    result["naive_correct"] = not problems.get("naive") if "naive" in problems else None
    if problems.get("naive"):
        result["flags"].append("naive-wrong")
        result["naive_problems"] = problems["naive"]
    final = "best" if "best" in kernels else "naive"
    result["correct"] = not problems.get(final)
    if problems.get(final) and final == "best":
        result["best_problems"] = problems["best"]
    result["deterministic"] = gpu.determinism(best_spec or spec, kernels[final], seeds[0])
    if not result["deterministic"]:
        result["flags"].append("nondeterministic")

    times = {}
    times["naive"] = gpu.time(spec, kernels["naive"], True, args.trials, args.warmup, args.max_seconds, seeds[-1] + 1)
    if "best" in kernels:
        times["best"] = gpu.time(best_spec, kernels["best"], True, args.trials, args.warmup, args.max_seconds, seeds[-1] + 1)
    else:
        times["best"] = times["naive"]
    if task["torch"]:
        ref, ins = gpu.reference_fn(spec, task["torch"])
        eager = lambda bufs: ref(*[bufs[n] for n in ins])
        times["eager"] = gpu.time(spec, eager, False, args.trials, args.warmup, args.max_seconds, seeds[-1] + 1)
        try:
            if args.compile_mode == "off":
                raise RuntimeError("--compile-mode off")
            if getattr(gpu, "prewarmed", None):
                ins_c, compiled = gpu.prewarmed
            else:
                ins_c = ins
                compiled = torch_compile(torch, ref, args.compile_mode)
            comp = lambda bufs: compiled(*[bufs[n] for n in ins_c])
            times["compile"] = gpu.time(spec, comp, False, args.trials, args.warmup, args.max_seconds, seeds[-1] + 1)
        except Exception as e:
            result["notes"].append(f"torch.compile failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    for k, t in times.items():
        if t["problems"]:
            result["correct" if k == final else "naive_correct"] = False
            result.setdefault(f"{k}_problems", []).extend(t["problems"])
        if t["off_stream"] and k in ("naive", "best"):
            # The naive kernel runs on the caller's stream: where it shows the same gap between
            # the stream's and the device's end, the gap is the host's (the 2026-12-05 corpus run
            # saw 0.37 ms on both kernels of one task), not work the stream did not wait for.
            gap = lambda x: x["median_ms"] - x["stream_median_ms"]
            if k == "best" and "naive" in times and gap(t) - gap(times["naive"]) <= max(0.08, 0.5 * t["median_ms"]):
                result["notes"].append(f"best: {gap(t):.3f} ms between the stream's end and the device's, as for the naive kernel "
                                       f"({gap(times['naive']):.3f} ms): host latency, not off-stream work")
                continue
            result["flags"].append(f"{k}-off-stream")
            if k == final:
                result["correct"] = False
    result["times"] = {k: {kk: vv for kk, vv in t.items() if kk != "problems"} for k, t in times.items()}
    best_ms = times["best"]["median_ms"]
    for k in ("naive", "eager", "compile"):
        if k in times:
            result[f"speedup_over_{k}"] = times[k]["median_ms"] / best_ms
    refs = [times[k]["median_ms"] for k in ("eager", "compile") if k in times]
    if refs:
        result["speedup_over_min"] = min(refs) / best_ms
    if max(result.get("speedup_over_eager", 0), result.get("speedup_over_compile", 0)) > 10:
        result["flags"].append("speedup>10x")
    bw, peak = gpu.copy_bw, gpu.peak
    nbytes, flops = bytes_moved(spec), spec.get("flops") or 0
    floor_ms = max(nbytes / bw, flops / peak) * 1e3
    result["roofline"] = {"bytes": nbytes, "flops": flops, "copy_gbps": bw / 1e9, "fp32_tflops": peak / 1e12, "floor_ms": floor_ms, "fraction": floor_ms / best_ms}
    if floor_ms > best_ms:
        result["flags"].append("below-roofline")


# ---------------------------------------------------------------- cheats self-test

def selftest_cheats(args, kp, out_dir):
    """Every cheat in cheats/ must be caught; the honest kernel must pass."""
    cdir = args.cheats_dir
    files = sorted(f for f in os.listdir(cdir) if f.endswith(".cu"))
    gpu = Gpu(out_dir, args)
    rows, failed = [], False
    for fname in files:
        path = os.path.join(cdir, fname)
        task = parse_task(path)
        expect_honest = "// cheat: none" in task["text"]
        spec = resolve_spec(kp, path, arch=args.arch)
        check_references(task, spec)
        gpu.torch_lines = task["torch"]
        gpu.ref, gpu.ref_ins = gpu.reference_fn(spec, task["torch"])
        call = gpu.load(task["stem"], "cheat", spec, task["text"], path)
        caught = []
        seeds = [1000 + i for i in range(args.seeds)]
        caught += gpu.check(spec, {"k": call}, seeds)["k"]
        if not gpu.determinism(spec, call, seeds[0]):
            caught.append("nondeterministic on a re-run")
        t = gpu.time(spec, call, True, min(args.trials, 20), args.warmup, args.max_seconds, 77)
        caught += t["problems"]
        if t["off_stream"]:
            caught.append(f"off-stream timing: {t['median_ms']:.3f} ms after a device sync, {t['stream_median_ms']:.3f} ms on the stream")
        # Without poisoning (reference result left in the output), would it have passed?
        unpoisoned = gpu.check(spec, {"k": call}, seeds[:1], poison=False)["k"]
        ok = (not caught) if expect_honest else bool(caught)
        failed |= not ok
        rows.append({"file": fname, "honest": expect_honest, "caught_by": caught, "passes_without_poisoning": not unpoisoned, "as_expected": ok})
        verdict = ("PASSES (honest kernel)" if not caught else "FLAGGED (false positive!)") if expect_honest else ("CAUGHT" if caught else "NOT CAUGHT")
        print(f"{fname}: {verdict}")
        for c in caught:
            print(f"    - {c[:300]}")
        if not expect_honest:
            print(f"    without poisoning (the reference's result left in the output) it would {'pass' if not unpoisoned else 'still fail'} the check")
    with open(os.path.join(out_dir, "cheats.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("self-test:", "every cheat caught, the honest kernel passes" if not failed else "FAILED")
    return 1 if failed else 0


# ---------------------------------------------------------------- report

def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt_ms(t):
    return f"{t:.3f}" if t is not None else "–"


def summarize(results, n_all):
    """The figures over `results` (result.json dicts) out of `n_all` tasks: counts, geomeans of the
    correct ones, and the shares of all tasks correct and faster (fast_p) or close to eager."""
    ok = [r for r in results if r.get("correct") and "error" not in r]
    summary = {
        "tasks": n_all, "measured": len(results), "correct": len(ok),
        "geomean_over_eager": geomean([r.get("speedup_over_eager") for r in ok]),
        "geomean_over_compile": geomean([r.get("speedup_over_compile") for r in ok]),
        "geomean_over_naive": geomean([r.get("speedup_over_naive") for r in ok]),
    }
    share = lambda test: sum(1 for r in ok if test(r)) / n_all if n_all else None
    for p in (1.0, 1.5, 2.0):
        # fast_p: share of ALL tasks that are correct and faster than p x min(eager, compile).
        summary[f"fast_{p:g}"] = share(lambda r: (r.get("speedup_over_min") or 0) > p)
    summary["fast_1_over_eager"] = share(lambda r: (r.get("speedup_over_eager") or 0) > 1.0)
    # Issue 20's goal: the share of all tasks correct and within 1.25x of eager's time.
    summary["within_1.25_of_eager"] = share(lambda r: (r.get("speedup_over_eager") or 0) >= 0.8)
    # Issue 34: maps at >= 0.9 of the copy bandwidth. The copy is timed by events on its stream, so
    # the kernel's fraction is too (its stream median); a kernel with off-stream work is not correct.
    maps = [stream_fraction(r) for r in ok if r.get("class") == "map"]
    maps = [f for f in maps if f is not None]
    summary["maps"] = len(maps)
    summary["maps_at_0.9_of_copy"] = sum(1 for f in maps if f >= 0.9)
    summary["maps_min_fraction"] = min(maps) if maps else None
    return summary


def stream_fraction(r):
    """The roofline floor over the optimized kernel's stream median (as the copy bandwidth is timed)."""
    floor = r.get("roofline", {}).get("floor_ms")
    ms = r.get("times", {}).get("best", {}).get("stream_median_ms")
    return floor / ms if floor and ms else None


def report(out_dir, task_files, title="KernelBench level-1 slice"):
    results = []
    for path in task_files:
        stem = os.path.splitext(os.path.basename(path))[0]
        rp = os.path.join(out_dir, "tasks", stem, "result.json")
        if os.path.exists(rp):
            with open(rp) as f:
                results.append(json.load(f))
    with open(os.path.join(out_dir, "results.jsonl"), "w") as f:
        for r in results:
            f.write(json.dumps({k: v for k, v in r.items() if k != "traceback"}) + "\n")
    env = {}
    if os.path.exists(os.path.join(out_dir, "env.json")):
        with open(os.path.join(out_dir, "env.json")) as f:
            env = json.load(f)
    lines = ["| task | naive ms | optimized ms | eager ms | compile ms | vs naive | vs eager | vs compile | vs min | roofline | roofline (stream) | correct | applied | flags |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    n_all = len(task_files)
    for r in results:
        t = r.get("times", {})
        g = lambda k: t.get(k, {}).get("median_ms")
        sp = lambda k: f"{r[k]:.2f}x" if r.get(k) else "–"
        roof = r.get("roofline", {}).get("fraction")
        roof_s = stream_fraction(r)
        status = "error" if "error" in r else ("yes" if r.get("correct") else "NO")
        lines.append(f"| {r['task']} | {fmt_ms(g('naive'))} | {fmt_ms(g('best'))} | {fmt_ms(g('eager'))} | {fmt_ms(g('compile'))} | "
                     f"{sp('speedup_over_naive')} | {sp('speedup_over_eager')} | {sp('speedup_over_compile')} | {sp('speedup_over_min')} | "
                     f"{f'{roof:.2f}' if roof else '–'} | {f'{roof_s:.2f}' if roof_s else '–'} | {status} | {r.get('applied') or 'none'} | {', '.join(r.get('flags', [])) or ''} |")
    summary = summarize(results, n_all)
    ok = [r for r in results if r.get("correct") and "error" not in r]
    f2 = lambda x: f"{x:.2f}x" if x else "–"
    pct = lambda x: f"{100 * x:.0f}%" if x is not None else "–"
    head = [f"# {title}: {len(results)} of {n_all} tasks measured, {len(ok)} correct", ""]
    if env:
        head += [f"GPU: {env.get('gpu')}; torch {env.get('torch')} (CUDA {env.get('torch_cuda')}), Triton {env.get('triton')}; {env.get('nvcc')}; "
                 f"kernelpro {env.get('kernelpro')}; copy bandwidth {env.get('copy_gbps', 0):.0f} GB/s; fp32 peak {env.get('fp32_tflops', 0):.1f} TFLOP/s; {env.get('date')}", ""]
    head += [f"geomean speedup of the optimized kernel (correct tasks): over eager {f2(summary['geomean_over_eager'])}, "
             f"over torch.compile {f2(summary['geomean_over_compile'])}, over the naive kernel {f2(summary['geomean_over_naive'])}",
             f"fast_1 {pct(summary['fast_1'])}, fast_1.5 {pct(summary['fast_1.5'])}, fast_2 {pct(summary['fast_2'])} against min(eager, compile); "
             f"fast_1 against eager {pct(summary['fast_1_over_eager'])}; within 1.25x of eager's time {pct(summary['within_1.25_of_eager'])}",
             f"maps at >= 0.9 of the copy bandwidth: {summary['maps_at_0.9_of_copy']} of {summary['maps']}"
             + (f" (lowest {summary['maps_min_fraction']:.2f})" if summary["maps_min_fraction"] else "")
             + "; roofline: the floor over the median with a device sync before the end event; roofline (stream): over the"
             " stream's median, timed as the copy bandwidth is", ""]
    errors = [f"- {r['task']}: {r['error']}" for r in results if "error" in r]
    problems = [f"- {r['task']}: " + "; ".join((r.get("best_problems") or r.get("naive_problems") or [])[:2])[:400] for r in results if r.get("best_problems") or r.get("naive_problems")]
    tail = []
    if errors:
        tail += ["", "Errors:"] + errors
    if problems:
        tail += ["", "Correctness problems:"] + problems
    md = "\n".join(head + lines + tail) + "\n"
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(md)
    return summary


def record_env(out_dir, kp, gpu):
    torch = gpu.torch
    env = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "torch_cuda": torch.version.cuda, "copy_gbps": gpu.copy_bw / 1e9, "fp32_tflops": gpu.peak / 1e12}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception:
        env["triton"] = None
    for key, cmd in (("nvcc", ["nvcc", "--version"]), ("kernelpro", [kp, "--version"])):
        try:
            env[key] = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[-1]
        except Exception:
            env[key] = None
    tmp = os.path.join(out_dir, f".env.{os.getpid()}.json")
    with open(tmp, "w") as f:
        json.dump(env, f, indent=1)
    os.replace(tmp, os.path.join(out_dir, "env.json"))


# ---------------------------------------------------------------- dry run

def dry_run(args, kp, files, out_dir):
    """No torch, no GPU: parse, resolve, generate every launcher and reference."""
    ddir = os.path.join(out_dir, "dry-run")
    os.makedirs(ddir, exist_ok=True)
    bad = 0
    for path in files:
        try:
            task = parse_task(path)
            spec = resolve_spec(kp, path, arch=args.arch)
            check_references(task, spec)
            variants = [("naive", spec, task["text"], path)]
            best = os.path.join(out_dir, "tasks", task["stem"], "best.cu")
            if os.path.exists(best):
                with open(best, encoding="utf-8") as f:
                    variants.append(("best", resolve_spec(kp, best, kernel=spec["kernel"], arch=args.arch), f.read(), best))
            for variant, s, text, label in variants:
                cu = os.path.join(ddir, f"{task['stem']}.{variant}.cu")
                with open(cu, "w") as f:
                    f.write(launcher_source(s, text, label, f"kp_launch_{variant}"))
                # The GPU run's nvcc command, one argument per line (argv[0] and the paths last).
                with open(os.path.join(ddir, f"{task['stem']}.{variant}.flags"), "w") as f:
                    f.write("\n".join(nvcc_command(s, cu, cu[:-3] + ".so")[1:-3]) + "\n")
            if task["torch"]:
                src = reference_source(spec, task["torch"])
                compile(src, f"<{task['stem']} reference>", "exec")
                with open(os.path.join(ddir, f"{task['stem']}.reference.py"), "w") as f:
                    f.write(f"# globals: {json.dumps(reference_globals(spec))}\n" + src)
            l = spec["launch"]
            print(f"ok  {task['name']:<48} {spec['kernel']:<24} class={task['class'] or '-':<16} grid={l['grid']} block={l['block']} "
                  f"{bytes_moved(spec) / 2**20:.0f} MiB{' flops=%.3g' % spec['flops'] if spec.get('flops') else ''} refs={len(task['torch'])}")
        except Exception as e:
            bad += 1
            print(f"ERR {path}: {e}")
    print(f"dry run: {len(files) - bad} of {len(files)} tasks parsed, resolved and generated into {ddir}")
    return 1 if bad else 0


# ---------------------------------------------------------------- driver

def task_files(dirs, only):
    files = []
    for d in dirs:
        if os.path.isfile(d):
            files.append(os.path.abspath(d))
            continue
        files += sorted(os.path.abspath(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".cu"))
    if only:
        keep = set(only.split(","))
        files = [f for f in files if os.path.splitext(os.path.basename(f))[0] in keep or parse_task(f)["name"] in keep]
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="*", default=[os.path.join(HERE, "tasks")], help="task directories or files (default: bench/kernelbench/tasks)")
    ap.add_argument("--out", default=os.path.join(ROOT, "kernelbench-out"), help="output directory")
    ap.add_argument("--kernelpro", help="the kernelpro binary (default: $KERNELPRO_BIN, .devbin/, target/release/, PATH)")
    ap.add_argument("--tasks", help="comma-separated task stems or names to run")
    ap.add_argument("--shard", help="I/N: run every N-th task starting at I (0-based)")
    ap.add_argument("--gpus", help="comma-separated GPU indices, or `all`: tasks run in parallel, one worker process per GPU")
    ap.add_argument("--budget", type=int, default=30, help="optimizer evaluations per task (0: no optimizer)")
    ap.add_argument("--strategy", default="mcts", choices=["mcts", "greedy", "random"])
    ap.add_argument("--optimize-time", type=int, default=180, help="optimizer wall-time limit per task, seconds")
    ap.add_argument("--optimize-arg", action="append", default=[], help="extra argument for kernelpro optimize (repeatable)")
    ap.add_argument("--kernel-timeout", type=int, default=60, help="seconds before kernelpro kills a hung candidate")
    ap.add_argument("--force-optimize", action="store_true", help="re-run the optimizer even where optimize.json exists")
    ap.add_argument("--force", action="store_true", help="re-measure tasks that already have a result")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=5.0, help="fewer trials where one implementation would take longer than this")
    ap.add_argument("--seeds", type=int, default=5, help="correctness trials (fresh seeds)")
    ap.add_argument("--seed", type=int, help="first correctness seed (default: random, recorded in the result)")
    ap.add_argument("--compile-mode", default="default", help="torch.compile mode (`off`: no torch.compile column)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--task-timeout", type=int, default=300, help="seconds before a task's worker process is killed")
    ap.add_argument("--time-budget", type=float, help="seconds this invocation may take: a phase's task starts only while its worst case still fits (optimize: --optimize-time + 90 s, build: 90 s, measure: 150 s)")
    ap.add_argument("--dry-run", action="store_true", help="no torch/GPU: parse tasks, resolve specs, write launchers and references")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--title", default="KernelBench level-1 slice", help="the report's heading")
    ap.add_argument("--selftest-cheats", action="store_true", help="run the planted cheats and say which check caught each")
    ap.add_argument("--cheats-dir", default=os.path.join(HERE, "cheats"))
    ap.add_argument("--phase", default="all", choices=["all", "optimize", "build", "measure"], help="run one phase over the tasks (all: optimize, build, measure)")
    ap.add_argument("--jobs-optimize", type=int, default=4, help="optimizer runs at a time: their compiles overlap, their GPU work takes turns (kernelpro serializes jobs on a device)")
    ap.add_argument("--jobs-build", type=int, default=max(1, min(8, (os.cpu_count() or 2) // 2)), help="builds (nvcc, torch.compile warm-up) at a time")
    ap.add_argument("--jobs-measure", type=int, default=2, help="measure workers per GPU: one checks and times while the next starts up (they take turns on the GPU)")
    ap.add_argument("--worker-task", help=argparse.SUPPRESS)
    ap.add_argument("--worker-optimize", help=argparse.SUPPRESS)
    ap.add_argument("--worker-build", help=argparse.SUPPRESS)
    args = ap.parse_args()

    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    if args.report_only:
        files = task_files(args.dirs, args.tasks)
        report(out_dir, files, args.title)
        return 0
    kp = kernelpro_bin(args.kernelpro)
    if args.worker_task:
        r = run_task(args, kp, os.path.abspath(args.worker_task), out_dir)
        return 0 if "error" not in r else 3
    if args.worker_optimize:
        return worker_optimize(args, kp, os.path.abspath(args.worker_optimize), out_dir)
    if args.worker_build:
        return worker_build(args, kp, os.path.abspath(args.worker_build), out_dir)
    if args.selftest_cheats:
        return selftest_cheats(args, kp, out_dir)
    files = task_files(args.dirs, args.tasks)
    if args.shard:
        i, n = (int(x) for x in args.shard.split("/"))
        files = files[i::n]
    if not files:
        raise SystemExit("no task files found")
    if args.dry_run:
        return dry_run(args, kp, files, out_dir)
    run_all(args, kp, files, out_dir)
    report(out_dir, files, args.title)
    return 0


def setup_roofline(gpu, out_dir, kp):
    """Copy bandwidth and fp32 peak, measured once per output directory (env.json) and reused."""
    env_path = os.path.join(out_dir, "env.json")
    if os.path.exists(env_path):
        try:
            with open(env_path) as f:
                e = json.load(f)
            gpu.copy_bw, gpu.peak = e["copy_gbps"] * 1e9, e["fp32_tflops"] * 1e12
            return
        except (ValueError, KeyError):
            pass
    gpu.copy_bw, gpu.peak = gpu.copy_bandwidth(), gpu.fp32_peak()
    record_env(out_dir, kp, gpu)


def stem_of(path):
    return os.path.splitext(os.path.basename(path))[0]


def marker(out_dir, path, name):
    return os.path.join(out_dir, "tasks", stem_of(path), name)


def run_pool(out_dir, label, items, jobs, gpus, cmd_for, timeout, deadline, t0, on_done):
    """Runs one worker process per item, `jobs` at a time; slot i gets GPU gpus[i % len(gpus)].
    No item starts after `deadline` seconds from t0; SIGTERM ends every worker's process group."""
    running = {}
    queue = list(items)

    def stop(signum, frame):
        for p, *_ in running.values():
            try:
                os.killpg(p.pid, 9)
            except ProcessLookupError:
                pass
        raise SystemExit(f"{label}: stopped by signal {signum}; finished items are kept, the rest resume on the next run")
    signal.signal(signal.SIGTERM, stop)
    while queue or running:
        for slot in range(max(1, jobs)):
            if slot in running or not queue:
                continue
            if deadline is not None and time.time() - t0 > deadline:
                print(f"time budget: {len(queue)} {label} item(s) not started (they resume on the next run)", flush=True)
                queue.clear()
                break
            path = queue.pop(0)
            env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1")
            g = gpus[slot % len(gpus)] if gpus else None
            if g is not None:
                env["CUDA_VISIBLE_DEVICES"] = g
            log = open(marker(out_dir, path, f"{label}.log"), "w")
            print(f"[{time.time() - t0:6.0f}s] {label} {stem_of(path)}" + (f" on GPU {g}" if g is not None else ""), flush=True)
            running[slot] = (subprocess.Popen(cmd_for(path), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True), path, time.time(), log)
        for slot, (p, path, started, log) in list(running.items()):
            rc = p.poll()
            if rc is None and time.time() - started < timeout:
                continue
            if rc is None:
                os.killpg(p.pid, 9)
                p.wait()
                rc = "timeout"
            log.close()
            on_done(path, rc, time.time() - started)
            del running[slot]
        time.sleep(0.3)


def run_all(args, kp, files, out_dir):
    """Three phases over all tasks, each resumable: optimize (kernelpro optimize, several at a time),
    build (nvcc builds and a torch.compile warm-up, several at a time), measure (one task at a
    time per GPU, so timings do not share a GPU)."""
    t0 = time.time()
    gpus = None
    if args.gpus:
        if args.gpus == "all":
            p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
            gpus = [str(i) for i, l in enumerate(p.stdout.splitlines()) if l.startswith("GPU ")] or ["0"]
        else:
            gpus = args.gpus.split(",")
    common = ["--out", out_dir, "--kernelpro", kp]
    for a in ("budget", "strategy", "optimize_time", "kernel_timeout", "trials", "warmup", "max_seconds", "seeds", "seed", "compile_mode", "arch"):
        v = getattr(args, a)
        if v is not None:
            common += [f"--{a.replace('_', '-')}", str(v)]
    common += [f"--optimize-arg={x}" for x in args.optimize_arg]
    if args.force_optimize:
        common.append("--force-optimize")
    me = [sys.executable, os.path.abspath(__file__)]
    cutoff = lambda worst: None if args.time_budget is None else args.time_budget - worst
    for path in files:
        os.makedirs(marker(out_dir, path, ""), exist_ok=True)
    phases = ["optimize", "build", "measure"] if args.phase == "all" else [args.phase]

    def report_line(path, rc, secs):
        print(f"[{time.time() - t0:6.0f}s]   {stem_of(path)} done in {secs:.0f} s (exit {rc})", flush=True)

    if "optimize" in phases:
        todo = [f for f in files if args.force_optimize or not (os.path.exists(marker(out_dir, f, "optimize.json")) or os.path.exists(marker(out_dir, f, "optimize.error")))]
        print(f"optimize: {len(files) - len(todo)} of {len(files)} done before; {len(todo)} to run, {args.jobs_optimize} at a time", flush=True)
        run_pool(out_dir, "optimize", todo, args.jobs_optimize, gpus, lambda f: me + ["--worker-optimize", f] + common,
                 args.optimize_time + 400, cutoff(args.optimize_time + 90), t0, report_line)
    if "build" in phases:
        todo = [f for f in files if args.force or not os.path.exists(marker(out_dir, f, "build.json"))]
        print(f"build: {len(files) - len(todo)} of {len(files)} done before; {len(todo)} to build, {args.jobs_build} at a time", flush=True)
        run_pool(out_dir, "build", todo, args.jobs_build, gpus, lambda f: me + ["--worker-build", f] + common, 300, cutoff(90), t0, report_line)
    if "measure" in phases:
        todo = [f for f in files if args.force or not os.path.exists(marker(out_dir, f, "result.json"))]
        print(f"measure: {len(files) - len(todo)} of {len(files)} done before; {len(todo)} to measure", flush=True)

        def measured(path, rc, secs):
            rp = marker(out_dir, path, "result.json")
            if not os.path.exists(rp):
                with open(marker(out_dir, path, "measure.log"), errors="replace") as f:
                    tail = f.read()[-2000:]
                task = parse_task(path)
                with open(rp, "w") as f:
                    json.dump({"task": task["name"], "file": path, "class": task["class"], "flags": [], "notes": [],
                               "error": f"the worker process ended without a result (exit {rc}: a crash, a fault or --task-timeout)", "log_tail": tail}, f, indent=1)
            with open(rp) as f:
                r = json.load(f)
            best = r.get("times", {}).get("best", {}).get("median_ms")
            msg = r.get("error") or f"best {best:.3f} ms, {r.get('speedup_over_min') or float('nan'):.2f}x over min(eager, compile), correct={r.get('correct')}"
            print(f"[{time.time() - t0:6.0f}s]   {stem_of(path)} ({secs:.0f} s): {msg}", flush=True)
        # --jobs-measure workers per GPU: they take turns on it (gpu_turn), their start-ups overlap.
        slots = (len(gpus) if gpus else 1) * max(1, args.jobs_measure)
        run_pool(out_dir, "measure", todo, slots, gpus, lambda f: me + ["--worker-task", f] + common, args.task_timeout, cutoff(150), t0, measured)


if __name__ == "__main__":
    sys.exit(main())
