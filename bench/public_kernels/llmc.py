#!/usr/bin/env python3
"""Task files from llm.c's version-1 CUDA kernels (karpathy/llm.c, dev/cuda/*.cu): the
optimizer on naive kernels we did not write (issue 20).

The kernels are copied verbatim from a checkout the user fetched (never committed: the output
goes to an ignored folder); what this file adds is ours: a launch spec for each (GPT-2 small
shapes, scaled down where a buffer would pass ~256 MiB), the `// torch:` reference lines, and
the two macros the kernels use. The result is a directory of task files that
bench/kernelbench/run.py measures like the KernelBench slice (optimize, then each version
against PyTorch eager and torch.compile).

Usage: python3 bench/public_kernels/llmc.py LLMC_DIR [OUT_DIR]
  LLMC_DIR: a checkout of karpathy/llm.c, or its bare git directory (read with `git show`)
  OUT_DIR:  default public-kernels/llmc (git-ignored)
Then on the GPU machine: KB_OUT=public-out bash bench/kernelbench/gpu.sh all public-kernels/llmc ...
"""
import os
import sys

from fetched import definition, read, task_file

# (source file in dev/cuda, kernel, class, our spec and reference lines). Shapes: B=8, T=1024,
# C=768, OC=4C as llm.c's dev programs use; V=50257 rows only where they fit.
TASKS = [
    ("gelu_forward.cu", "gelu_forward_kernel1", "map", """
// torch: out = F.gelu(inp, approximate='tanh')
// kernelpro: let N = 8 * 1024 * 768
// kernelpro: grid = ceil_div(N, 128)
// kernelpro: block = 128
// kernelpro: out = out float[N]
// kernelpro: inp = in float[N] uniform(-3, 3)
// kernelpro: N = N
// kernelpro: check rtol=1e-4 atol=1e-4
"""),
    ("residual_forward.cu", "residual_forward_kernel1", "map", """
// torch: out = inp1 + inp2
// kernelpro: let N = 8 * 1024 * 768
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: out = out float[N]
// kernelpro: inp1 = in float[N] uniform(-1, 1)
// kernelpro: inp2 = in float[N] uniform(-1, 1)
// kernelpro: N = N
// kernelpro: check rtol=1e-5 atol=1e-5
"""),
    ("layernorm_forward.cu", "layernorm_forward_kernel1", "row-reduction", """
// torch: out = F.layer_norm(inp.view(BT, CH), (CH,), weight, bias, eps=1e-5).reshape(-1)
// torch: mean = inp.view(BT, CH).mean(1)
// torch: rstd = torch.rsqrt(inp.view(BT, CH).var(1, unbiased=False) + 1e-5)
// kernelpro: let BT = 8 * 1024
// kernelpro: let CH = 768
// kernelpro: grid = ceil_div(BT, 256)
// kernelpro: block = 256
// kernelpro: out = out float[BT * CH]
// kernelpro: mean = out float[BT]
// kernelpro: rstd = out float[BT]
// kernelpro: inp = in float[BT * CH] uniform(-1, 1)
// kernelpro: weight = in float[CH] uniform(-1, 1)
// kernelpro: bias = in float[CH] uniform(-1, 1)
// kernelpro: N = BT
// kernelpro: C = CH
// kernelpro: check rtol=1e-4 atol=1e-4
"""),
    ("softmax_forward.cu", "softmax_forward_kernel1", "row-reduction", """
// torch: out = torch.softmax(inp.view(ROWS, V), dim=1).reshape(-1)
// kernelpro: let ROWS = 1024
// kernelpro: let V = 50257
// kernelpro: grid = ceil_div(ROWS, 128)
// kernelpro: block = 128
// kernelpro: out = out float[ROWS * V]
// kernelpro: inp = in float[ROWS * V] uniform(-4, 4)
// kernelpro: N = ROWS
// kernelpro: C = V
// kernelpro: check rtol=1e-4 atol=1e-6
"""),
    ("encoder_forward.cu", "encoder_forward_kernel1", "gather", """
// torch: out = (wte.view(V, CH)[inp.long().view(B, T)] + wpe.view(T, CH).unsqueeze(0)).reshape(-1)
// kernelpro: let B = 8
// kernelpro: let T = 1024
// kernelpro: let CH = 768
// kernelpro: let V = 50257
// kernelpro: grid = ceil_div(B * T, 512)
// kernelpro: block = 512
// kernelpro: out = out float[B * T * CH]
// kernelpro: inp = in int[B * T] randint(0, 50256)
// kernelpro: wte = in float[V * CH] uniform(-1, 1)
// kernelpro: wpe = in float[T * CH] uniform(-1, 1)
// kernelpro: B = B
// kernelpro: T = T
// kernelpro: C = CH
// kernelpro: check rtol=1e-5 atol=1e-5
"""),
    ("crossentropy_forward.cu", "crossentropy_forward_kernel1", "gather", """
// torch: losses = -torch.log(probs.view(B * T, V).gather(1, targets.long().view(-1, 1))).reshape(-1)
// kernelpro: let B = 4
// kernelpro: let T = 256
// kernelpro: let V = 50257
// kernelpro: grid = ceil_div(B * T, 128)
// kernelpro: block = 128
// kernelpro: losses = out float[B * T]
// kernelpro: probs = in float[B * T * V] uniform(0.01, 1)
// kernelpro: targets = in int[B * T] randint(0, 50256)
// kernelpro: B = B
// kernelpro: T = T
// kernelpro: V = V
// kernelpro: check rtol=1e-5 atol=1e-5
"""),
    ("matmul_forward.cu", "matmul_forward_kernel1", "contraction", """
// torch: out = (inp.view(BT, CH) @ weight.view(OC, CH).t() + bias).reshape(-1)
// kernelpro: let BT = 8 * 1024
// kernelpro: let CH = 768
// kernelpro: let OC = 4 * 768
// kernelpro: grid = (ceil_div(BT, 16), ceil_div(OC, 16))
// kernelpro: block = (16, 16)
// kernelpro: out = out float[BT * OC]
// kernelpro: inp = in float[BT * CH] uniform(-1, 1)
// kernelpro: weight = in float[OC * CH] uniform(-1, 1)
// kernelpro: bias = in float[OC] uniform(-1, 1)
// kernelpro: BT = BT
// kernelpro: C = CH
// kernelpro: OC = OC
// kernelpro: op = gemm BT OC CH
// kernelpro: check rtol=1e-3 atol=1e-3
"""),
]

# What the kernels take from llm.c's headers, as our own lines.
PRELUDE = """#include <cuda_runtime.h>
#define floatX float
#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)
"""


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    llmc = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "..", "public-kernels", "llmc")
    os.makedirs(out, exist_ok=True)
    for rel, kernel, klass, spec in TASKS:
        text = definition(read(llmc, "dev/cuda", rel), kernel)
        stem = f"llmc_{kernel}"
        header = [f"// task: {stem}", f"// class: {klass}", f"// karpathy/llm.c dev/cuda/{rel}: {kernel}, verbatim below the spec."]
        with open(os.path.join(out, stem + ".cu"), "w", encoding="utf-8") as f:
            f.write(task_file(header, PRELUDE, [], spec, text))
        print(os.path.join(out, stem + ".cu"))


if __name__ == "__main__":
    main()
