"""The fetched corpus (issue 29 item 5) as data: naive kernels from public repositories the project had
not used, each with its repository's faster version where it has one ("expert twin").

Each entry names where the kernel lives (repository, pinned commit, path, kernel name) and adds what is
ours: the class, the launch spec and `// torch:` reference lines (realistic sizes, buffers <= ~512 MiB),
the few lines of prelude the kernel needs from the rest of its file (constants, typedefs, macros,
written anew), the device helpers to copy along with it, and the twin's stem. fetch_corpus.py turns the
table into task files; the kernels themselves are read from the mirrors and never committed.

Kernels left out on purpose (so the list is not mistaken for a sample of everything): in-place global
reductions (the input is the scratch space, so a second run sees other inputs), kernels whose buffer is
named `in` or `F` (run.py's references cannot name them), __constant__ filters (no spec for constant
memory), kernels with sizes baked into the code at toy scale, and a racy one (a shared row buffer written
by every thread of a block).
"""

# Repositories: short key -> (owner/name, commit). The commit is the one the mirror held when the table
# was written (`fetch github:owner/name`); fetch_corpus.py reads every file at that commit.
REPOS = {
    "cba": ("CoffeeBeforeArch/cuda_programming", "8711be08e2060680820304594f3691cc0016edd1"),
    "liu": ("Liu-xiandong/How_to_optimize_in_GPU", "5d2def3e082c4e1364c3ade54451b7b9d1d6f044"),
    "olcf": ("olcf/cuda-training-series", "9cd77d539d85ee3457e09a083ba299b787b7a16e"),
    "sib": ("siboehm/SGEMM_CUDA", "60cba6f9b20a198116c76f18de8047f44df8c8b8"),
    "bruce": ("brucefan1983/CUDA-Programming", "8b6c96ba30fafeb3f71c74b2abb18a6bf849822d"),
    "packt": ("PacktPublishing/Learn-CUDA-Programming", "10bd9b59bfcc680d608ea1417da5089f73d91b11"),
    "nvblog": ("NVIDIA-developer-blog/code-samples", "72d62ec464442786a36754508bcb1094d197d6a5"),
    "pmpp": ("kogelbezmogel/CUDA_Programming_Massively_Parallel_Processors", "a5072595cf4cf3bb56688cdd01dc9c78dfcbdb72"),
    "route": ("RouteTrace/CUDA_Kernel_Samples", "a4e416ce2f91a83c15227549403a974880fa955e"),
    "infa": ("Infatoshi/cuda-course", "79681bfd003d403170dd93c0436c6f2a45cb390f"),
    "fsm": ("SzymonOzog/FastSoftmax", "5fb0d4ad9a32d16916e3decbcd409b407063a052"),
    "gau": ("gau-nernst/learn-cuda", "1454f8b71499a68eacdbf44c08e36a7003d8ab99"),
    "tony": ("Tony-Tan/CUDA_Freshman", "979938216fbbd8bc81ccbc525c4dd1f8c0c9fcbb"),
    "xpiler": ("ShouyangDong/xpiler-eval", "eafb6ad2008c80b67e16c5be10d51ef8ae579768"),
    "l0ki": ("l0kireddy/100Day-Challenge", "9000a05e72d4c6267623e4d38c50a1c9ea0eae5a"),
}


def T(stem, repo, path, kernel, klass, spec, prelude="", helpers=(), twin=None, role="naive"):
    return {"stem": stem, "repo": repo, "path": path, "kernel": kernel, "class": klass, "spec": spec,
            "prelude": prelude, "helpers": list(helpers), "twin": twin, "role": role}


# An expert twin's spec or prelude that is its naive kernel's (the same task, the same inputs).
SAME = object()


def E(stem, repo, path, kernel, klass, spec, prelude="", helpers=()):
    return T(stem, repo, path, kernel, klass, spec, prelude, helpers, None, "expert")


def _same_as_naive(tasks):
    """`SAME` in an expert twin's spec or prelude replaced by its naive kernel's."""
    naive = {t["twin"]: t for t in tasks if t.get("twin")}
    for t in tasks:
        for key in ("spec", "prelude"):
            if t[key] is SAME:
                t[key] = naive[t["stem"]][key]
    return tasks


SQ_INT_MM = """
// torch: c = (a.view(D, D).double() @ b.view(D, D).double()).int().reshape(-1)
// kernelpro: let D = 2048
// kernelpro: grid = (D / 32, D / 32)
// kernelpro: block = (32, 32)
// kernelpro: c = out int[D * D]
// kernelpro: a = in int[D * D] randint(-8, 8)
// kernelpro: b = in int[D * D] randint(-8, 8)
"""

BRUCE_T = """
// torch: B = A.view(D, D).t().contiguous().reshape(-1)
// kernelpro: let D = 4096
// kernelpro: grid = (D / 32, D / 32)
// kernelpro: block = (32, 32)
// kernelpro: A = in float[D * D] uniform(-1, 1)
// kernelpro: B = out float[D * D]
// kernelpro: N = D
// kernelpro: check rtol=0 atol=0
"""

ROUTE_T = """
// torch: output = input.view(R, C).t().contiguous().reshape(-1)
// kernelpro: let R = 8192
// kernelpro: let C = 4096
// kernelpro: grid = {grid}
// kernelpro: block = (32, 32)
// kernelpro: input = in float[R * C] uniform(-1, 1)
// kernelpro: output = out float[R * C]
// kernelpro: M = R
// kernelpro: N = C
// kernelpro: check rtol=0 atol=0
"""

SOFTMAX_FSM = """
// torch: b = torch.softmax(a.view(H, W), dim=1).reshape(-1)
// kernelpro: let H = 1024
// kernelpro: let W = 4096
// kernelpro: instantiate = {inst}
// kernelpro: grid = {grid}
// kernelpro: block = {block}
// kernelpro: a = in float[H * W] uniform(-4, 4)
// kernelpro: b = out float[H * W]
// kernelpro: w = W
// kernelpro: h = H
// kernelpro: check rtol=1e-4 atol=1e-6
"""

TASKS = _same_as_naive([
    # ---------------------------------------------------------------- CoffeeBeforeArch/cuda_programming
    T("cba_vector_add", "cba", "01_vector_addition/baseline/vectorAdd.cu", "vectorAdd", "map", """
// torch: c = a + b
// kernelpro: let N = 1 << 26
// kernelpro: grid = ceil_div(N, 1024)
// kernelpro: block = 1024
// kernelpro: a = in int[N] randint(-1000, 1000)
// kernelpro: b = in int[N] randint(-1000, 1000)
// kernelpro: c = out int[N]
// kernelpro: N = N
"""),
    T("cba_matrix_mul", "cba", "02_matrix_mul/baseline/mmul.cu", "matrixMul", "matmul",
      SQ_INT_MM + "// kernelpro: N = D\n", twin="cba_matrix_mul_tiled"),
    E("cba_matrix_mul_tiled", "cba", "02_matrix_mul/tiled/mmul.cu", "matrixMul", "matmul", SQ_INT_MM,
      prelude="const int N = 2048;\nconst int SHMEM_SIZE = 1 << 10;\n"),
    T("cba_sum_reduction", "cba", "03_sum_reduction/diverged/sumReduction.cu", "sumReduction", "block-reduction", """
// torch: v_r = v.view(-1, 256).sum(1).int()
// kernelpro: let N = 1 << 26
// kernelpro: grid = N / 256
// kernelpro: block = 256
// kernelpro: v = in int[N] randint(0, 9)
// kernelpro: v_r = out int[N / 256]
""", prelude="#define SHMEM_SIZE 256\n", twin="cba_sum_reduction_no_conflicts"),
    E("cba_sum_reduction_no_conflicts", "cba", "03_sum_reduction/no_confliicts/sumReduction.cu", "sum_reduction",
      "block-reduction", SAME, prelude="#define SHMEM_SIZE 256 * 4\n"),
    T("cba_histogram", "cba", "04_histogram/global_atomic/histogram.cu", "histogram", "histogram", """
// torch: result = result + torch.bincount((a.long() - 97) // 4, minlength=7).int()
// kernelpro: let N = 1 << 26
// kernelpro: grid = N / 512
// kernelpro: block = 512
// kernelpro: a = in int8[N] randint(97, 122)
// kernelpro: result = inout int[7] zeros
// kernelpro: N = N
""", prelude="constexpr int BINS = 7;\nconstexpr int DIV = ((26 + BINS - 1) / BINS);\n", twin="cba_histogram_shmem"),
    E("cba_histogram_shmem", "cba", "04_histogram/shmem_atomic/histogram.cu", "histogram", "histogram", SAME, prelude=SAME),
    T("cba_convolution_1d", "cba", "05_convolution/1d_naive/convolution.cu", "convolution_1d", "conv1d", """
// torch: result = torch.nn.functional.conv1d(array.double().view(1, 1, -1), mask.double().view(1, 1, -1), padding=MASK // 2).reshape(-1).int()
// kernelpro: let N = 1 << 24
// kernelpro: let MASK = 7
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: array = in int[N] randint(0, 100)
// kernelpro: mask = in int[MASK] randint(0, 10)
// kernelpro: result = out int[N]
// kernelpro: n = N
// kernelpro: m = MASK
"""),
    # ---------------------------------------------------------------- Liu-xiandong/How_to_optimize_in_GPU
    T("liu_reduce0", "liu", "reduce/reduce_v0_baseline.cu", "reduce0", "block-reduction", """
// torch: d_out = d_in.view(-1, 256).sum(1)
// kernelpro: let N = 32 * 1024 * 1024
// kernelpro: grid = N / 256
// kernelpro: block = 256
// kernelpro: d_in = in float[N] uniform(-1, 1)
// kernelpro: d_out = out float[N / 256]
// kernelpro: check rtol=1e-4 atol=1e-4
""", prelude="#define THREAD_PER_BLOCK 256\n", twin="liu_reduce7"),
    E("liu_reduce7", "liu", "reduce/reduce_v7_shuffle.cu", "reduce7", "block-reduction", """
// torch: d_out = d_in.view(1024, -1).sum(1)
// kernelpro: let N = 32 * 1024 * 1024
// kernelpro: instantiate = reduce7<256, 128>
// kernelpro: grid = 1024
// kernelpro: block = 256
// kernelpro: d_in = in float[N] uniform(-1, 1)
// kernelpro: d_out = out float[1024]
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-3
""", prelude="#define THREAD_PER_BLOCK 256\n#define WARP_SIZE 32\n", helpers=["warpReduceSum"]),
    T("liu_add", "liu", "elementwise/elementwise_add.cu", "add", "map", """
// torch: c = a + b
// kernelpro: let N = 32 * 1024 * 1024
// kernelpro: grid = N / 256
// kernelpro: block = 256
// kernelpro: a = in float[N] uniform(-1, 1)
// kernelpro: b = in float[N] uniform(-1, 1)
// kernelpro: c = out float[N]
""", prelude="#define THREAD_PER_BLOCK 256\n", twin="liu_vec4_add"),
    E("liu_vec4_add", "liu", "elementwise/elementwise_add.cu", "vec4_add", "map", """
// torch: c = a + b
// kernelpro: let N = 32 * 1024 * 1024
// kernelpro: grid = N / 256 / 4
// kernelpro: block = 256
// kernelpro: a = in float[N] uniform(-1, 1)
// kernelpro: b = in float[N] uniform(-1, 1)
// kernelpro: c = out float[N]
""", prelude="#define THREAD_PER_BLOCK 256\n#define FETCH_FLOAT4(pointer) (reinterpret_cast<float4*>(&(pointer))[0])\n"),
    # ---------------------------------------------------------------- olcf/cuda-training-series
    T("olcf_mmul", "olcf", "exercises/hw1/matrix_mul_solution.cu", "mmul", "matmul", """
// torch: C = (A.view(D, D) @ B.view(D, D)).reshape(-1)
// kernelpro: let D = 4096
// kernelpro: grid = (D / 32, D / 32)
// kernelpro: block = (32, 32)
// kernelpro: A = in float[D * D] uniform(-1, 1)
// kernelpro: B = in float[D * D] uniform(-1, 1)
// kernelpro: C = out float[D * D]
// kernelpro: ds = D
// kernelpro: op = gemm D D D
// kernelpro: check rtol=1e-3 atol=1e-3
""", prelude="const int block_size = 32;\n", twin="olcf_mmul_shared"),
    E("olcf_mmul_shared", "olcf", "exercises/hw2/matrix_mul_shared_solution.cu", "mmul", "matmul", SAME, prelude=SAME),
    T("olcf_row_sums", "olcf", "exercises/hw4/matrix_sums_solution.cu", "row_sums", "row-reduction", """
// torch: sums = A.view(D, D).sum(1)
// kernelpro: let D = 8192
// kernelpro: grid = ceil_div(D, 256)
// kernelpro: block = 256
// kernelpro: A = in float[D * D] uniform(-1, 1)
// kernelpro: sums = out float[D]
// kernelpro: ds = D
// kernelpro: check rtol=1e-4 atol=1e-3
""", prelude="const int block_size = 256;\n", twin="olcf_row_sums_block"),
    E("olcf_row_sums_block", "olcf", "exercises/hw5/matrix_sums_solution.cu", "row_sums", "row-reduction", """
// torch: sums = A.view(D, D).sum(1)
// kernelpro: let D = 8192
// kernelpro: grid = D
// kernelpro: block = 256
// kernelpro: A = in float[D * D] uniform(-1, 1)
// kernelpro: sums = out float[D]
// kernelpro: ds = D
// kernelpro: check rtol=1e-4 atol=1e-3
""", prelude=SAME),
    T("olcf_column_sums", "olcf", "exercises/hw4/matrix_sums_solution.cu", "column_sums", "column-reduction", """
// torch: sums = A.view(D, D).sum(0)
// kernelpro: let D = 8192
// kernelpro: grid = ceil_div(D, 256)
// kernelpro: block = 256
// kernelpro: A = in float[D * D] uniform(-1, 1)
// kernelpro: sums = out float[D]
// kernelpro: ds = D
// kernelpro: check rtol=1e-4 atol=1e-3
""", prelude="const int block_size = 256;\n"),
    T("olcf_atomic_red", "olcf", "exercises/hw5/reductions.cu", "atomic_red", "scalar-reduction", """
// torch: out = out + gdata.sum()
// kernelpro: let NN = 32 * 1024 * 1024
// kernelpro: grid = ceil_div(NN, 256)
// kernelpro: block = 256
// kernelpro: gdata = in float[NN] uniform(-1, 1)
// kernelpro: out = inout float[1] zeros
// kernelpro: check rtol=1e-3 atol=1e-1
""", prelude="const size_t N = 32ULL * 1024ULL * 1024ULL;\nconst int BLOCK_SIZE = 256;\n", twin="olcf_reduce_ws"),
    E("olcf_reduce_ws", "olcf", "exercises/hw5/reductions.cu", "reduce_ws", "scalar-reduction", """
// torch: out = out + gdata.sum()
// kernelpro: let NN = 32 * 1024 * 1024
// kernelpro: grid = 640
// kernelpro: block = 256
// kernelpro: gdata = in float[NN] uniform(-1, 1)
// kernelpro: out = inout float[1] zeros
// kernelpro: check rtol=1e-3 atol=1e-1
""", prelude=SAME),
    # ---------------------------------------------------------------- siboehm/SGEMM_CUDA
    T("sib_sgemm_naive", "sib", "src/kernels/1_naive.cuh", "sgemm_naive", "matmul", """
// torch: C = alpha * (A.view(D, D) @ B.view(D, D)).reshape(-1) + beta * C
// kernelpro: let D = 4096
// kernelpro: grid = (D / 32, D / 32)
// kernelpro: block = (32, 32)
// kernelpro: M = D
// kernelpro: N = D
// kernelpro: K = D
// kernelpro: alpha = 1.0
// kernelpro: A = in float[D * D] uniform(-1, 1)
// kernelpro: B = in float[D * D] uniform(-1, 1)
// kernelpro: beta = 0.5
// kernelpro: C = inout float[D * D] uniform(-1, 1)
// kernelpro: op = gemm D D D
// kernelpro: check rtol=1e-3 atol=1e-3
""", twin="sib_sgemm_2d_blocktiling"),
    E("sib_sgemm_2d_blocktiling", "sib", "src/kernels/5_kernel_2D_blocktiling.cuh", "sgemm2DBlocktiling", "matmul", """
// torch: C = alpha * (A.view(D, D) @ B.view(D, D)).reshape(-1) + beta * C
// kernelpro: let D = 4096
// kernelpro: instantiate = sgemm2DBlocktiling<128, 128, 8, 8, 8>
// kernelpro: grid = (D / 128, D / 128)
// kernelpro: block = 256
// kernelpro: M = D
// kernelpro: N = D
// kernelpro: K = D
// kernelpro: alpha = 1.0
// kernelpro: A = in float[D * D] uniform(-1, 1)
// kernelpro: B = in float[D * D] uniform(-1, 1)
// kernelpro: beta = 0.5
// kernelpro: C = inout float[D * D] uniform(-1, 1)
// kernelpro: op = gemm D D D
// kernelpro: check rtol=1e-3 atol=1e-3
""", prelude="#include <cassert>\n#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))\n"),
    # ---------------------------------------------------------------- brucefan1983/CUDA-Programming
    T("bruce_transpose1", "bruce", "src/07-global-memory/matrix.cu", "transpose1", "transpose", BRUCE_T,
      prelude="typedef float real;\nconst int TILE_DIM = 32;\n", twin="bruce_transpose_shared_padded"),
    T("bruce_transpose2", "bruce", "src/07-global-memory/matrix.cu", "transpose2", "transpose", BRUCE_T,
      prelude="typedef float real;\nconst int TILE_DIM = 32;\n", twin="bruce_transpose_shared_padded"),
    E("bruce_transpose_shared_padded", "bruce", "src/08-shared-memory/bank.cu", "transpose2", "transpose", BRUCE_T,
      prelude=SAME),
    T("bruce_reduce_atomic", "bruce", "src/09-atomic/reduce.cu", "reduce", "scalar-reduction", """
// torch: d_y = d_y + d_x.sum()
// kernelpro: let NN = 20 * 10240 * 128
// kernelpro: grid = ceil_div(NN, 128)
// kernelpro: block = 128
// kernelpro: smem = 512
// kernelpro: d_x = in float[NN] uniform(-1, 1)
// kernelpro: d_y = inout float[1] zeros
// kernelpro: N = NN
// kernelpro: check rtol=1e-3 atol=1e-1
""", prelude="typedef float real;\n", twin="bruce_reduce_cp"),
    E("bruce_reduce_cp", "bruce", "src/10-warp/reduce1parallelism.cu", "reduce_cp", "scalar-reduction", """
// torch: d_y = d_x.view(-1, 10240, 128).sum((0, 2))
// kernelpro: let NN = 20 * 10240 * 128
// kernelpro: grid = 10240
// kernelpro: block = 128
// kernelpro: smem = 512
// kernelpro: d_x = in float[NN] uniform(-1, 1)
// kernelpro: d_y = out float[10240]
// kernelpro: N = NN
// kernelpro: check rtol=1e-3 atol=1e-3
""", prelude="#include <cooperative_groups.h>\nusing namespace cooperative_groups;\ntypedef float real;\n"),
    T("bruce_add_double", "bruce", "src/03-basic-framework/add1.cu", "add", "map", """
// torch: z = x + y
// kernelpro: let N = 1 << 25
// kernelpro: grid = N / 128
// kernelpro: block = 128
// kernelpro: x = in double[N] uniform(-1, 1)
// kernelpro: y = in double[N] uniform(-1, 1)
// kernelpro: z = out double[N]
"""),
    # ---------------------------------------------------------------- PacktPublishing/Learn-CUDA-Programming
    T("packt_transpose_naive", "packt", "Chapter02/02_memory_overview/04_matrix_transpose/matrix_transpose.cu",
      "matrix_transpose_naive", "transpose", """
// torch: output = input.view(D, D).t().contiguous().reshape(-1)
// kernelpro: let D = 4096
// kernelpro: grid = (D / 32, D / 32)
// kernelpro: block = (32, 32)
// kernelpro: input = in int[D * D] randint(-100000, 100000)
// kernelpro: output = out int[D * D]
""", prelude="#define N 4096\n#define BLOCK_SIZE 32\n", twin="packt_transpose_shared"),
    E("packt_transpose_shared", "packt", "Chapter02/02_memory_overview/04_matrix_transpose/conflict_solved.cu",
      "matrix_transpose_shared", "transpose", SAME, prelude=SAME),
    T("packt_sgemm", "packt", "Chapter02/02_memory_overview/01_sgemm/sgemm.cu", "sgemm_gpu_kernel", "matmul", """
// torch: C = alpha * (A.view(D, D) @ B.view(D, D)).reshape(-1) + beta * C
// kernelpro: let D = 2048
// kernelpro: grid = (D / 16, D / 16)
// kernelpro: block = (16, 16)
// kernelpro: A = in float[D * D] uniform(-1, 1)
// kernelpro: B = in float[D * D] uniform(-1, 1)
// kernelpro: C = inout float[D * D] uniform(-1, 1)
// kernelpro: N = D
// kernelpro: M = D
// kernelpro: K = D
// kernelpro: alpha = 1.0
// kernelpro: beta = 0.5
// kernelpro: op = gemm D D D
// kernelpro: check rtol=1e-3 atol=1e-3
""", prelude="#define BLOCK_DIM_X 16\n#define BLOCK_DIM_Y 16\n"),
    T("packt_device_add", "packt", "Chapter01/01_cuda_introduction/02_vector_addition/vector_addition_gpu_thread_block.cu",
      "device_add", "map", """
// torch: c = a + b
// kernelpro: let NN = 1 << 26
// kernelpro: grid = NN / 512
// kernelpro: block = 512
// kernelpro: a = in int[NN] randint(-1000, 1000)
// kernelpro: b = in int[NN] randint(-1000, 1000)
// kernelpro: c = out int[NN]
""", prelude="#define N 512\n"),
    # ---------------------------------------------------------------- NVIDIA-developer-blog/code-samples
    T("nvblog_transpose_naive", "nvblog", "series/cuda-cpp/transpose/transpose.cu", "transposeNaive", "transpose", """
// torch: odata = idata.view(D, D).t().contiguous().reshape(-1)
// kernelpro: let D = 4096
// kernelpro: grid = (D / 32, D / 32)
// kernelpro: block = (32, 8)
// kernelpro: odata = out float[D * D]
// kernelpro: idata = in float[D * D] uniform(-1, 1)
// kernelpro: check rtol=0 atol=0
""", prelude="const int TILE_DIM = 32;\nconst int BLOCK_ROWS = 8;\n", twin="nvblog_transpose_no_bank_conflicts"),
    E("nvblog_transpose_no_bank_conflicts", "nvblog", "series/cuda-cpp/transpose/transpose.cu",
      "transposeNoBankConflicts", "transpose", SAME, prelude=SAME),
    # ---------------------------------------------------------------- kogelbezmogel (PMPP exercises)
    T("pmpp_histogram_basic", "pmpp", "CHAPTER_09/histogram_basic.cu", "histogram_basic", "histogram", """
// torch: H = H + torch.bincount(A.long(), minlength=10).int()
// kernelpro: let NN = 1 << 26
// kernelpro: grid = ceil_div(NN, 256)
// kernelpro: block = 256
// kernelpro: A = in int[NN] randint(0, 9)
// kernelpro: H = inout int[10] zeros
// kernelpro: N = NN
""", twin="pmpp_histogram_shmem"),
    E("pmpp_histogram_shmem", "pmpp", "CHAPTER_09/histogram_shmem.cu", "histogram_privatization", "histogram", SAME, prelude="#define BINS 10\n"),
    T("pmpp_to_gray", "pmpp", "OHTER/bluring/to_gray_scale.cu", "convert_to_gray_kenrel", "map", """
// torch: gray_img_ptr_device = (0.30 * rgb_img_ptr_device.view(-1, 3)[:, 0].trunc().double() + 0.59 * rgb_img_ptr_device.view(-1, 3)[:, 1].trunc().double() + 0.11 * rgb_img_ptr_device.view(-1, 3)[:, 2].trunc().double()).float()
// kernelpro: let P = 4096 * 4096
// kernelpro: grid = ceil_div(P, 256)
// kernelpro: block = 256
// kernelpro: gray_img_ptr_device = out float[P]
// kernelpro: rgb_img_ptr_device = in float[3 * P] uniform(0, 255)
// kernelpro: gray_img_len = P
// kernelpro: check rtol=1e-5 atol=1e-3
"""),
    T("pmpp_matrix_multiplication", "pmpp", "CHAPTER_06/matrix_multiplication.cu", "matrix_multiplication", "matmul", """
// torch: C = (A.view(NR, KD) @ B.view(KD, MC)).reshape(-1)
// kernelpro: let NR = 4096
// kernelpro: let KD = 1024
// kernelpro: let MC = 2048
// kernelpro: grid = (ceil_div(MC, 32), ceil_div(NR, 32))
// kernelpro: block = (32, 32)
// kernelpro: A = in float[NR * KD] uniform(-1, 1)
// kernelpro: B = in float[KD * MC] uniform(-1, 1)
// kernelpro: C = out float[NR * MC]
// kernelpro: N = NR
// kernelpro: K = KD
// kernelpro: M = MC
// kernelpro: op = gemm NR MC KD
// kernelpro: check rtol=1e-3 atol=1e-3
""", twin="pmpp_matrix_multiplication_tiled"),
    E("pmpp_matrix_multiplication_tiled", "pmpp", "CHAPTER_06/matrix_multiplication_tiled.cu",
      "matrix_multiplication_tiled", "matmul", SAME, prelude="#define TILE 32\n"),
    T("pmpp_scan_kogge_stone", "pmpp", "CHAPTER_11/scan_kogge_stone_multiple_blocks.cu", "scan_kogge_stone_mblocks", "scan", """
// torch: B = A.view(-1, 1024).cumsum(1).reshape(-1)
// torch: S = A.view(-1, 1024).sum(1)
// kernelpro: let NN = 1 << 24
// kernelpro: grid = NN / 1024
// kernelpro: block = 1024
// kernelpro: A = in float[NN] uniform(-1, 1)
// kernelpro: B = out float[NN]
// kernelpro: S = out float[NN / 1024]
// kernelpro: N = NN
// kernelpro: check rtol=1e-4 atol=1e-3
""", prelude="#define BLOCK 1024\n"),
    # ---------------------------------------------------------------- RouteTrace/CUDA_Kernel_Samples
    T("route_transpose_v0", "route", "transpose/transpose.cu", "device_transpose_v0", "transpose",
      ROUTE_T.format(grid="(ceil_div(C, 32), ceil_div(R, 32))"), twin="route_transpose_v4"),
    T("route_transpose_v1", "route", "transpose/transpose.cu", "device_transpose_v1", "transpose",
      ROUTE_T.format(grid="(ceil_div(R, 32), ceil_div(C, 32))"), twin="route_transpose_v4"),
    E("route_transpose_v4", "route", "transpose/transpose.cu", "device_transpose_v4", "transpose",
      ROUTE_T.format(grid="(ceil_div(C, 32), ceil_div(R, 32))").replace(
          "// kernelpro: grid", "// kernelpro: instantiate = device_transpose_v4<32>\n// kernelpro: grid")),
    T("route_sigmoid", "route", "elementwise/sigmoid.cu", "sigmoid", "map", """
// torch: y = torch.sigmoid(x)
// kernelpro: let NN = 1 << 26
// kernelpro: grid = ceil_div(NN, 256)
// kernelpro: block = 256
// kernelpro: x = in float[NN] uniform(-6, 6)
// kernelpro: y = out float[NN]
// kernelpro: N = NN
// kernelpro: check rtol=1e-5 atol=1e-6
""", twin="route_sigmoid_float4"),
    E("route_sigmoid_float4", "route", "elementwise/sigmoid.cu", "sigmoid_float4", "map", """
// torch: y = torch.sigmoid(x)
// kernelpro: let NN = 1 << 26
// kernelpro: grid = ceil_div(NN / 4, 256)
// kernelpro: block = 256
// kernelpro: x = in float[NN] uniform(-6, 6)
// kernelpro: y = out float[NN]
// kernelpro: N = NN
// kernelpro: check rtol=1e-5 atol=1e-6
""", prelude="#define FLOAT4(value) (reinterpret_cast<float4*>(&(value))[0])\n"),
    # ---------------------------------------------------------------- Infatoshi/cuda-course
    T("infa_matmul_naive", "infa", "05_Writing_your_First_Kernels/03 Profiling/01_naive_matmul.cu", "matrixMultiply", "matmul", """
// torch: C = (A.view(MM, KK) @ B.view(KK, NN)).reshape(-1)
// kernelpro: let MM = 2048
// kernelpro: let NN = 2048
// kernelpro: let KK = 2048
// kernelpro: grid = (ceil_div(NN, 16), ceil_div(MM, 16))
// kernelpro: block = (16, 16)
// kernelpro: A = in float[MM * KK] uniform(-1, 1)
// kernelpro: B = in float[KK * NN] uniform(-1, 1)
// kernelpro: C = out float[MM * NN]
// kernelpro: M = MM
// kernelpro: N = NN
// kernelpro: K = KK
// kernelpro: op = gemm MM NN KK
// kernelpro: check rtol=1e-3 atol=1e-3
""", twin="infa_matmul_tiled"),
    E("infa_matmul_tiled", "infa", "05_Writing_your_First_Kernels/03 Profiling/02_tiled_matmul.cu", "matrixMultiplyOptimized",
      "matmul", SAME, prelude="#define TILE_SIZE 16\n"),
    T("infa_softmax", "infa", "08_Triton/02_softmax.cu", "softmax_cuda", "softmax", """
// torch: output = torch.softmax(input.view(BB, NC), dim=1).reshape(-1)
// kernelpro: let BB = 256
// kernelpro: let NC = 1024
// kernelpro: grid = (ceil_div(NC, 256), BB)
// kernelpro: block = 256
// kernelpro: input = in float[BB * NC] uniform(-4, 4)
// kernelpro: output = out float[BB * NC]
// kernelpro: B = BB
// kernelpro: N = NC
// kernelpro: check rtol=1e-4 atol=1e-6
"""),
    # ---------------------------------------------------------------- SzymonOzog/FastSoftmax
    T("fsm_softmax_naive", "fsm", "kernels.cu", "softmax_kernel", "softmax",
      SOFTMAX_FSM.format(inst="softmax_kernel<float>", grid="(W / 32, H / 32)", block="(32, 32)"),
      twin="fsm_softmax_block_row"),
    E("fsm_softmax_block_row", "fsm", "kernels.cu", "softmax_kernel4", "softmax",
      SOFTMAX_FSM.format(inst="softmax_kernel4<float>", grid="H", block="(1, 1024)"), prelude="#define BLOCK_DIM_Y 1024\n"),
    # ---------------------------------------------------------------- gau-nernst/learn-cuda
    T("gau_box_blur", "gau", "06_box_blur/box_blur.cu", "box_blur_kernel_v1", "box-filter", """
// torch: output = torch.nn.functional.avg_pool2d(input.view(BB, 1, HH, WW), KS, stride=1, padding=KS // 2).reshape(-1)
// kernelpro: let BB = 8
// kernelpro: let HH = 2048
// kernelpro: let WW = 2048
// kernelpro: let KS = 7
// kernelpro: grid = (ceil_div(WW, 16), ceil_div(HH, 16), BB)
// kernelpro: block = (16, 16, 1)
// kernelpro: input = in float[BB * HH * WW] uniform(0, 1)
// kernelpro: output = out float[BB * HH * WW]
// kernelpro: width = WW
// kernelpro: height = HH
// kernelpro: kernel_size = KS
// kernelpro: check rtol=1e-4 atol=1e-5
"""),
    T("gau_sum_rows_kahan", "gau", "03_sum/sum.cu", "sum_v1_kernel", "row-reduction", """
// torch: output = input.view(MR, NC).sum(1)
// kernelpro: let MR = 8192
// kernelpro: let NC = 4096
// kernelpro: grid = ceil_div(MR, 256)
// kernelpro: block = 256
// kernelpro: input = in float[MR * NC] uniform(-1, 1)
// kernelpro: output = out float[MR]
// kernelpro: M = MR
// kernelpro: N = NC
// kernelpro: check rtol=1e-4 atol=1e-3
""", twin="gau_sum_rows_block_atomic"),
    E("gau_sum_rows_block_atomic", "gau", "03_sum/sum.cu", "sum_v2_kernel", "row-reduction", """
// torch: output = output + input.view(MR, NC).sum(1)
// kernelpro: let MR = 8192
// kernelpro: let NC = 4096
// kernelpro: grid = (ceil_div(NC, 256), MR)
// kernelpro: block = 256
// kernelpro: smem = 1024
// kernelpro: input = in float[MR * NC] uniform(-1, 1)
// kernelpro: output = inout float[MR] zeros
// kernelpro: M = MR
// kernelpro: N = NC
// kernelpro: check rtol=1e-4 atol=1e-3
"""),
    # ---------------------------------------------------------------- Tony-Tan/CUDA_Freshman
    T("tony_sum_matrix", "tony", "9_sum_matrix2D/sum_matrix2D.cu", "sumMatrix", "map", """
// torch: MatC = MatA + MatB
// kernelpro: let D = 4096
// kernelpro: grid = (D / 32, D / 32)
// kernelpro: block = (32, 32)
// kernelpro: MatA = in float[D * D] uniform(-1, 1)
// kernelpro: MatB = in float[D * D] uniform(-1, 1)
// kernelpro: MatC = out float[D * D]
// kernelpro: nx = D
// kernelpro: ny = D
"""),
    T("tony_transform_naive_row", "tony", "22_transform_matrix2D/transform_matrix2D.cu", "transformNaiveRow", "transpose", """
// torch: MatB = MatA.view(NY, NX).t().contiguous().reshape(-1)
// kernelpro: let NX = 4096
// kernelpro: let NY = 2048
// kernelpro: grid = (ceil_div(NX, 32), ceil_div(NY, 32))
// kernelpro: block = (32, 32)
// kernelpro: MatA = in float[NX * NY] uniform(-1, 1)
// kernelpro: MatB = out float[NX * NY]
// kernelpro: nx = NX
// kernelpro: ny = NY
// kernelpro: check rtol=0 atol=0
"""),
    T("tony_transform_naive_col", "tony", "22_transform_matrix2D/transform_matrix2D.cu", "transformNaiveCol", "transpose", """
// torch: MatB = MatA.view(NX, NY).t().contiguous().reshape(-1)
// kernelpro: let NX = 4096
// kernelpro: let NY = 2048
// kernelpro: grid = (ceil_div(NX, 32), ceil_div(NY, 32))
// kernelpro: block = (32, 32)
// kernelpro: MatA = in float[NX * NY] uniform(-1, 1)
// kernelpro: MatB = out float[NX * NY]
// kernelpro: nx = NX
// kernelpro: ny = NY
// kernelpro: check rtol=0 atol=0
"""),
    # ---------------------------------------------------------------- ShouyangDong/xpiler-eval (hand-written CUDA baselines, sizes in the code)
    T("xpiler_rmsnorm", "xpiler", "XpilerBench/CUDA/rmsnorm_8192_4096.cu", "rmsnorm", "row-reduction", """
// torch: B = (A.view(8192, 4096) / torch.sqrt((A.view(8192, 4096) ** 2).mean(1, keepdim=True) + 1e-5)).reshape(-1)
// kernelpro: grid = 8
// kernelpro: block = 1024
// kernelpro: A = in float[8192 * 4096] uniform(-1, 1)
// kernelpro: B = out float[8192 * 4096]
// kernelpro: check rtol=1e-4 atol=1e-5
"""),
    T("xpiler_instancenorm", "xpiler", "XpilerBench/CUDA/instancenorm_1_64_112_112.cu", "instancenorm", "normalization", """
// torch: output = torch.nn.functional.instance_norm(input.view(1, 64, 112, 112), weight=gamma, bias=beta, eps=1e-5).reshape(-1)
// kernelpro: grid = ceil_div(64 * 112 * 112, 256)
// kernelpro: block = 256
// kernelpro: input = in float[64 * 112 * 112] uniform(-1, 1)
// kernelpro: output = out float[64 * 112 * 112]
// kernelpro: gamma = in float[64] uniform(0.5, 1.5)
// kernelpro: beta = in float[64] uniform(-0.5, 0.5)
// kernelpro: check rtol=1e-4 atol=1e-4
"""),
    # ---------------------------------------------------------------- l0kireddy/100Day-Challenge
    T("l0ki_maxpool2d", "l0ki", "day 95/2D_Max_Pooling.cu", "maxpool2d_kernel", "pooling", """
// torch: output = torch.nn.functional.max_pool2d(input.view(1, 1, HH, WW), 3, stride=2, padding=1).reshape(-1)
// kernelpro: let HH = 8192
// kernelpro: let WW = 8192
// kernelpro: let HO = (HH + 2 - 2 - 1) / 2 + 1
// kernelpro: let WO = (WW + 2 - 2 - 1) / 2 + 1
// kernelpro: grid = (ceil_div(WO, 16), ceil_div(HO, 16))
// kernelpro: block = (16, 16)
// kernelpro: input = in float[HH * WW] uniform(-1, 1)
// kernelpro: H = HH
// kernelpro: W = WW
// kernelpro: kernel_size = 3
// kernelpro: stride = 2
// kernelpro: padding = 1
// kernelpro: dilation = 1
// kernelpro: H_out = HO
// kernelpro: W_out = WO
// kernelpro: output = out float[HO * WO]
// kernelpro: check rtol=0 atol=0
""", prelude="#include <cfloat>\n"),
    T("l0ki_matvec", "l0ki", "Day-3/matrix_vec_mult.cu", "matVecMulKernel", "matvec", """
// torch: result = mat.view(ROWS, COLS) @ vec
// kernelpro: let ROWS = 16384
// kernelpro: let COLS = 4096
// kernelpro: grid = ceil_div(ROWS, 256)
// kernelpro: block = 256
// kernelpro: mat = in float[ROWS * COLS] uniform(-1, 1)
// kernelpro: vec = in float[COLS] uniform(-1, 1)
// kernelpro: result = out float[ROWS]
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-3
""", prelude="#define N 16384\n#define M 4096\n"),
    T("l0ki_matrix_add_rows_x", "l0ki", "Day-2/MatrixAdd.cu", "MatrixAdd_B", "map", """
// torch: C = A + B
// kernelpro: let D = 4096
// kernelpro: grid = (ceil_div(D, 16), ceil_div(D, 16))
// kernelpro: block = (16, 16)
// kernelpro: A = in float[D * D] uniform(-1, 1)
// kernelpro: B = in float[D * D] uniform(-1, 1)
// kernelpro: C = out float[D * D]
// kernelpro: N = D
"""),
])
