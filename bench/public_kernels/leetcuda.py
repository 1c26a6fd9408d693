#!/usr/bin/env python3
"""Task files from LeetCUDA's plain fp32 kernels (xlite-dev/LeetCUDA, kernels/*/*.cu): the
optimizer on naive kernels we did not write, in styles other than llm.c's (issue 20).

The kernels (and the device helpers they call) are copied verbatim from a checkout the user
fetched (never committed: the output goes to an ignored folder); what this file adds is ours: a
launch spec for each, the `// torch:` reference lines, and the macros the kernels use. The
styles differ from our corpus and llm.c: a block per token with a thread per channel (the
launch's block is the embedding width), 1D transposes by / and %, a template block reduction
ending in one float atomic per block, RoPE on pairs without a bounds check.

Usage: python3 bench/public_kernels/leetcuda.py LEETCUDA_DIR [OUT_DIR]
  LEETCUDA_DIR: a checkout of xlite-dev/LeetCUDA, or its bare git directory (read with `git show`)
  OUT_DIR:      default public-kernels/leetcuda (git-ignored)
Then on the GPU machine: KB_OUT=public-out bash bench/kernelbench/gpu.sh all public-kernels/leetcuda ...
"""
import os
import sys

from fetched import definition, read, task_file

# (source file under kernels/, [device helpers..., kernel], class, our spec and reference lines).
TASKS = [
    ("elementwise/elementwise.cu", ["elementwise_add_f32_kernel"], "map", """
// torch: c = a + b
// kernelpro: let N = 1 << 25
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: a = in float[N] uniform(-1, 1)
// kernelpro: b = in float[N] uniform(-1, 1)
// kernelpro: c = out float[N]
// kernelpro: N = N
// kernelpro: check rtol=1e-6 atol=1e-6
"""),
    ("relu/relu.cu", ["relu_f32_kernel"], "map", """
// torch: y = torch.relu(x)
// kernelpro: let N = 1 << 25
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: y = out float[N]
// kernelpro: N = N
// kernelpro: check rtol=1e-6 atol=1e-6
"""),
    ("sigmoid/sigmoid.cu", ["sigmoid_f32_kernel"], "map", """
// torch: y = torch.sigmoid(x)
// kernelpro: let N = 1 << 25
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: x = in float[N] uniform(-8, 8)
// kernelpro: y = out float[N]
// kernelpro: N = N
// kernelpro: check rtol=1e-5 atol=1e-6
"""),
    ("elu/elu.cu", ["elu", "elu_f32_kernel"], "map", """
// torch: y = F.elu(x, alpha=1.0)
// kernelpro: let N = 1 << 25
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: x = in float[N] uniform(-4, 4)
// kernelpro: y = out float[N]
// kernelpro: N = N
// kernelpro: check rtol=1e-5 atol=1e-6
"""),
    ("rope/rope.cu", ["rope_f32_kernel"], "map", """
// torch: out = (lambda i, x1, x2: (lambda a: torch.stack([x1 * torch.cos(a) - x2 * torch.sin(a), x1 * torch.sin(a) + x2 * torch.cos(a)], dim=1).reshape(-1))((i // NP).float() / torch.pow(10000.0, (2 * (i % NP)).float() / (NP * 2.0))))(torch.arange(S * NP, device=x.device), x[0::2], x[1::2])
// kernelpro: let S = 4096
// kernelpro: let NP = 1024
// kernelpro: grid = S * NP / 256
// kernelpro: block = 256
// kernelpro: x = in float[S * NP * 2] uniform(-1, 1)
// kernelpro: out = out float[S * NP * 2]
// kernelpro: seq_len = S
// kernelpro: N = NP
// kernelpro: check rtol=1e-3 atol=2e-3
"""),
    ("histogram/histogram.cu", ["histogram_i32_kernel"], "histogram", """
// torch: y = y + torch.bincount(a.long(), minlength=1024).int()
// kernelpro: let N = 1 << 24
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: a = in int[N] randint(0, 1023)
// kernelpro: y = inout int[1024] zeros
// kernelpro: N = N
// kernelpro: check rtol=0 atol=0
"""),
    ("embedding/embedding.cu", ["embedding_f32_kernel"], "gather", """
// torch: output = weight.view(V, E)[idx.long()].reshape(-1)
// kernelpro: let TOKENS = 16384
// kernelpro: let V = 32000
// kernelpro: let E = 1024
// kernelpro: grid = TOKENS
// kernelpro: block = E
// kernelpro: idx = in int[TOKENS] randint(0, 31999)
// kernelpro: weight = in float[V * E] uniform(-1, 1)
// kernelpro: output = out float[TOKENS * E]
// kernelpro: n = TOKENS
// kernelpro: emb_size = E
// kernelpro: check rtol=0 atol=0
"""),
    ("mat-transpose/mat_transpose.cu", ["mat_transpose_f32_col2row_kernel"], "transpose", """
// torch: y = x.view(R, C).t().reshape(-1)
// kernelpro: let R = 4096
// kernelpro: let C = 8192
// kernelpro: grid = ceil_div(R * C, 256)
// kernelpro: block = 256
// kernelpro: x = in float[R * C] uniform(-1, 1)
// kernelpro: y = out float[R * C]
// kernelpro: row = R
// kernelpro: col = C
// kernelpro: check rtol=0 atol=0
"""),
    ("mat-transpose/mat_transpose.cu", ["mat_transpose_f32_row2col_kernel"], "transpose", """
// torch: y = x.view(R, C).t().reshape(-1)
// kernelpro: let R = 4096
// kernelpro: let C = 8192
// kernelpro: grid = ceil_div(R * C, 256)
// kernelpro: block = 256
// kernelpro: x = in float[R * C] uniform(-1, 1)
// kernelpro: y = out float[R * C]
// kernelpro: row = R
// kernelpro: col = C
// kernelpro: check rtol=0 atol=0
"""),
    ("sgemm/sgemm.cu", ["sgemm_naive_f32_kernel"], "contraction", """
// torch: c = (a.view(M, K) @ b.view(K, N)).reshape(-1)
// kernelpro: let M = 2048
// kernelpro: let N = 2048
// kernelpro: let K = 2048
// kernelpro: grid = (ceil_div(N, 32), ceil_div(M, 32))
// kernelpro: block = (32, 32)
// kernelpro: a = in float[M * K] uniform(-1, 1)
// kernelpro: b = in float[K * N] uniform(-1, 1)
// kernelpro: c = out float[M * N]
// kernelpro: M = M
// kernelpro: N = N
// kernelpro: K = K
// kernelpro: check rtol=1e-3 atol=1e-3
"""),
    ("dot-product/dot_product.cu", ["warp_reduce_sum_f32", "dot_prod_f32_f32_kernel"], "scalar-reduction", """
// torch: y = (a.double() * b.double()).sum().float().reshape(1)
// kernelpro: let N = 1 << 24
// kernelpro: instantiate = dot_prod_f32_f32_kernel<256>
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: a = in float[N] uniform(-1, 1)
// kernelpro: b = in float[N] uniform(-1, 1)
// kernelpro: y = inout float[1] zeros
// kernelpro: N = N
// kernelpro: check rtol=1e-3 atol=1e-2
"""),
]

# What the kernels take from LeetCUDA's headers and macros, as our own lines.
PRELUDE = """#include <cuda_runtime.h>
#define WARP_SIZE 32
#define MAX_EXP_F32 88.3762626647949f
#define MIN_EXP_F32 -88.3762626647949f
#define ALPHA 1.0f
#define theta 10000.0f
"""


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    repo = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "..", "public-kernels", "leetcuda")
    os.makedirs(out, exist_ok=True)
    for rel, names, klass, spec in TASKS:
        source = read(repo, "kernels", rel)
        kernel = names[-1]
        stem = f"leetcuda_{kernel}"
        header = [f"// task: {stem}", f"// class: {klass}",
                  f"// xlite-dev/LeetCUDA kernels/{rel}: {', '.join(names)}, verbatim below the spec."]
        # Helpers first: the spec stands directly above its kernel.
        with open(os.path.join(out, stem + ".cu"), "w", encoding="utf-8") as f:
            f.write(task_file(header, PRELUDE, [definition(source, n) for n in names[:-1]], spec,
                              definition(source, kernel)))
        print(os.path.join(out, stem + ".cu"))


if __name__ == "__main__":
    main()
