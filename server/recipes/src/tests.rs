//! Each recipe on a kernel where it applies and one where it must not, as
//! unified diffs; every rewrite compiled with the real nvcc; the proposer's
//! ordering and deduplication.

use crate::{Recipe, RecipeProposer, all};
use expect_test::{Expect, expect};
use kernelpro_search::{FindingNote, NodeId, ProposeContext, Proposer, SearchMemory};
use std::path::{Path, PathBuf};

/// A fixture by name: `bench/NAME` is a benchmark kernel, `own/NAME` one of this crate's `fixtures/`.
fn fixture(name: &str) -> String {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = crate_dir.join("../../tests/fixtures");
    let path = match (name.strip_prefix("bench/"), name.strip_prefix("own/")) {
        (Some(bench), _) => crate_dir.join("../../bench/kernels").join(bench),
        (_, Some(own)) => crate_dir.join("fixtures").join(own),
        _ if name == "kernels.cu" => dir.join("h200-probe/kernels.cu"),
        _ => dir.join("recipes").join(name),
    };
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn recipe(name: &str) -> Box<dyn Recipe> {
    all().into_iter().find(|r| r.name() == name).unwrap_or_else(|| panic!("no recipe {name}"))
}

/// Every (fixture, kernel, recipe) case of the snapshot tests, for the nvcc test.
const CASES: &[(&str, &str, &str)] = &[
    ("tune_block.cu", "saxpy", "TuneParameter"),
    ("no_tune.cu", "saxpy", "TuneParameter"),
    ("kernels.cu", "saxpy_fp64", "FloatLiterals"),
    ("double_axpy.cu", "daxpy", "FloatLiterals"),
    ("kernels.cu", "strided_copy", "RestrictConst"),
    ("already_restrict.cu", "copy", "RestrictConst"),
    ("kernels.cu", "strided_copy", "Ldg"),
    ("in_place.cu", "scale_in_place", "Ldg"),
    ("unroll_loops.cu", "fir", "PragmaUnroll"),
    ("unroll_done.cu", "fir", "PragmaUnroll"),
    ("tune_block.cu", "saxpy", "LaunchBounds"),
    ("kernels.cu", "saxpy_fp64", "LaunchBounds"),
    ("kernels.cu", "transpose_conflicts", "PadSharedTile"),
    ("padded_tile.cu", "transpose_padded", "PadSharedTile"),
    ("kernels.cu", "saxpy_fp64", "VectorizeLoads"),
    ("kernels.cu", "strided_copy", "VectorizeLoads"),
    ("reduce_shared.cu", "block_sum", "WarpShuffleReduce"),
    ("atomic_sum.cu", "sum_atomic", "WarpShuffleReduce"),
    ("reduce_2d_block.cu", "sum_atomic_2d", "WarpShuffleReduce"),
    ("matmul_naive.cu", "matmul_naive", "SharedTiling"),
    ("matmul_rect_block.cu", "matmul_naive", "SharedTiling"),
    ("rowmajor_slow.cu", "scale2d", "LoopInterchange"),
    ("matmul_naive.cu", "matmul_naive", "LoopInterchange"),
    ("bench/histogram.cu", "histogram", "PrivatizeAtomics"),
    ("own/hist_refused.cu", "hist_wide", "PrivatizeAtomics"),
    ("own/hist_refused.cu", "hist_unknown", "PrivatizeAtomics"),
    ("bench/reduction.cu", "reduce_sum", "CoarsenReduce"),
    ("atomic_sum.cu", "sum_atomic", "CoarsenReduce"),
    ("reduce_shared.cu", "block_sum", "CoarsenReduce"),
    ("reduce_2d_block.cu", "sum_atomic_2d", "CoarsenReduce"),
    ("own/structural/dot_template_block_atomic.cu", "dot_block", "CoarsenReduce"),
    ("own/structural/sumsq_shared_literal_tree.cu", "sum_squares", "CoarsenReduce"),
    ("bench/softmax.cu", "softmax_rows", "WarpRows"),
    ("own/rows_norm.cu", "l2_normalize", "WarpRows"),
    ("own/rows_refused.cu", "next_row_diff", "WarpRows"),
    ("own/rows_refused.cu", "running_decay", "WarpRows"),
    ("bench/elementwise_fp64.cu", "elementwise", "PrefetchL2"),
    ("own/copy_rows.cu", "copy_rows", "PrefetchL2"),
    ("bench/transpose.cu", "transpose", "PrefetchL2"),
    ("bench/stencil2d.cu", "stencil", "PrefetchL2"),
    ("bench/reduction.cu", "reduce_sum", "PrefetchL2"),
    ("own/prefetch_refused.cu", "moved_index", "PrefetchL2"),
    ("own/prefetch_refused.cu", "hidden_loads", "PrefetchL2"),
    ("own/prefetch_refused.cu", "gather", "PrefetchL2"),
    ("own/prefetch_refused.cu", "row_sums", "PrefetchL2"),
];

/// The recipe's rewrites of `kernel` as notes and unified diffs, or `no rewrite`.
fn render(file: &str, kernel: &str, recipe_name: &str) -> String {
    let text = fixture(file);
    let r = recipe(recipe_name);
    let rewrites = r.rewrite(&text, kernel);
    assert_eq!(r.applies(&text, kernel), !rewrites.is_empty());
    if rewrites.is_empty() {
        return "no rewrite\n".to_string();
    }
    rewrites
        .iter()
        .map(|rw| {
            let diff = similar::TextDiff::from_lines(&text, &rw.source);
            format!("## {}\n{}", rw.note, diff.unified_diff().context_radius(1))
        })
        .collect()
}

fn check(file: &str, kernel: &str, recipe_name: &str, expected: Expect) {
    assert!(CASES.contains(&(file, kernel, recipe_name)), "add ({file}, {kernel}, {recipe_name}) to CASES");
    expected.assert_eq(&render(file, kernel, recipe_name));
}

#[test]
fn tune_parameter() {
    check(
        "tune_block.cu",
        "saxpy",
        "TuneParameter",
        expect![[r#"
        ## tune B = 256
        @@ -1,3 +1,3 @@
         // kernelpro: let N = 1 << 20
        -// kernelpro: tune B in [128, 256, 512]
        +// kernelpro: tune B in [256, 128, 512]
         // kernelpro: grid = ceil_div(N, B)
        ## tune B = 512
        @@ -1,3 +1,3 @@
         // kernelpro: let N = 1 << 20
        -// kernelpro: tune B in [128, 256, 512]
        +// kernelpro: tune B in [512, 128, 256]
         // kernelpro: grid = ceil_div(N, B)
    "#]],
    );
    check(
        "no_tune.cu",
        "saxpy",
        "TuneParameter",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn float_literals() {
    check(
        "kernels.cu",
        "saxpy_fp64",
        "FloatLiterals",
        expect![[r#"
        ## float literals (1) and float math calls (0)
        @@ -8,3 +8,3 @@
           int i = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (i < n) y[i] = a * x[i] + y[i] * 2.0;
        +  if (i < n) y[i] = a * x[i] + y[i] * 2.0f;
         }
    "#]],
    );
    check(
        "double_axpy.cu",
        "daxpy",
        "FloatLiterals",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn restrict_const() {
    check(
        "kernels.cu",
        "strided_copy",
        "RestrictConst",
        expect![[r#"
        ## __restrict__ out, __restrict__ in
        @@ -11,3 +11,3 @@
         // strided (uncoalesced) access
        -__global__ void strided_copy(float* out, const float* in, int n, int stride) {
        +__global__ void strided_copy(float* __restrict__ out, const float* __restrict__ in, int n, int stride) {
           int i = blockIdx.x * blockDim.x + threadIdx.x;
    "#]],
    );
    check(
        "already_restrict.cu",
        "copy",
        "RestrictConst",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn ldg() {
    check(
        "kernels.cu",
        "strided_copy",
        "Ldg",
        expect![[r#"
        ## __ldg loads of in
        @@ -13,3 +13,3 @@
           int i = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (i < n) out[i] = in[(long long)(i * stride) % n];
        +  if (i < n) out[i] = __ldg(&in[(long long)(i * stride) % n]);
         }
    "#]],
    );
    check(
        "in_place.cu",
        "scale_in_place",
        "Ldg",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn pragma_unroll() {
    check(
        "unroll_loops.cu",
        "fir",
        "PragmaUnroll",
        expect![[r#"
        ## #pragma unroll at line 7, #pragma unroll 4 at line 9
        @@ -6,4 +6,6 @@
           for (int r = 0; r < reps; ++r) {
        +    #pragma unroll
             for (int t = 0; t < TAPS; ++t) acc += w[t] * x[(i + t) % n];
           }
        +  #pragma unroll 4
           for (int k = 0; k < reps; ++k) acc *= 0.5f;
    "#]],
    );
    check(
        "unroll_done.cu",
        "fir",
        "PragmaUnroll",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn launch_bounds() {
    check(
        "tune_block.cu",
        "saxpy",
        "LaunchBounds",
        expect![[r#"
        ## __launch_bounds__(512)
        @@ -8,3 +8,3 @@
         // kernelpro: n = N
        -__global__ void saxpy(float* y, const float* x, float a, int n) {
        +__global__ void __launch_bounds__(512) saxpy(float* y, const float* x, float a, int n) {
           int i = blockIdx.x * blockDim.x + threadIdx.x;
    "#]],
    );
    // No launch spec: the block size is unknown.
    check(
        "kernels.cu",
        "saxpy_fp64",
        "LaunchBounds",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn pad_shared_tile() {
    check(
        "kernels.cu",
        "transpose_conflicts",
        "PadSharedTile",
        expect![[r#"
        ## pad tile[..][33]
        @@ -27,3 +27,3 @@
         __global__ void transpose_conflicts(float* out, const float* in, int N) {
        -  __shared__ float tile[32][32];
        +  __shared__ float tile[32][33];
           int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    "#]],
    );
    check(
        "padded_tile.cu",
        "transpose_padded",
        "PadSharedTile",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn vectorize_loads() {
    check(
        "kernels.cu",
        "saxpy_fp64",
        "VectorizeLoads",
        expect![[r#"
            ## float4 loads of x, y and stores of y where aligned, grid-stride with a scalar tail
            @@ -8,3 +8,14 @@
               int i = blockIdx.x * blockDim.x + threadIdx.x;
            -  if (i < n) y[i] = a * x[i] + y[i] * 2.0;
            +  const int kp_n4 = (((unsigned long long)(x) | (unsigned long long)(y)) % 16 == 0) ? n / 4 : 0;
            +  for (int kp_v = i; kp_v < kp_n4; kp_v += gridDim.x * blockDim.x) {
            +    const float4 kp_x = reinterpret_cast<const float4*>(x)[kp_v];
            +    const float4 kp_y = reinterpret_cast<const float4*>(y)[kp_v];
            +    float4 kp_out;
            +    kp_out.x = a * kp_x.x + kp_y.x * 2.0;
            +    kp_out.y = a * kp_x.y + kp_y.y * 2.0;
            +    kp_out.z = a * kp_x.z + kp_y.z * 2.0;
            +    kp_out.w = a * kp_x.w + kp_y.w * 2.0;
            +    reinterpret_cast<float4*>(y)[kp_v] = kp_out;
            +  }
            +  for (int kp_t = kp_n4 * 4 + i; kp_t < n; kp_t += gridDim.x * blockDim.x) y[kp_t] = a * x[kp_t] + y[kp_t] * 2.0;
             }
        "#]],
    );
    check(
        "kernels.cu",
        "strided_copy",
        "VectorizeLoads",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn warp_shuffle_reduce() {
    check(
        "reduce_shared.cu",
        "block_sum",
        "WarpShuffleReduce",
        expect![[r#"
        ## warp-shuffle reduction of the last 32 partial sums of sdata
        @@ -12,3 +12,3 @@
           __syncthreads();
        -  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        +  for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
             if (tid < s) sdata[tid] += sdata[tid + s];
        @@ -16,2 +16,8 @@
           }
        +  if (tid < 32) {
        +    float kp_v = sdata[tid] + sdata[tid + 32];
        +    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +    if (tid == 0) sdata[0] = kp_v;
        +  }
        +  __syncthreads();
           if (tid == 0) out[blockIdx.x] = sdata[0];
    "#]],
    );
    check(
        "atomic_sum.cu",
        "sum_atomic",
        "WarpShuffleReduce",
        expect![[r#"
        ## one atomicAdd per warp into total after a shuffle reduction
        @@ -8,3 +8,8 @@
           int i = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (i < n) atomicAdd(total, x[i]);
        +  {
        +    float kp_v = 0;
        +    if (i < n) kp_v = x[i];
        +    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +    if ((threadIdx.x & 31) == 0) atomicAdd(total, kp_v);
        +  }
         }
    "#]],
    );
    // 16-wide blocks: a warp spans two rows, the last-warp and lane-0 tricks do not hold.
    check(
        "reduce_2d_block.cu",
        "sum_atomic_2d",
        "WarpShuffleReduce",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn shared_tiling() {
    check(
        "matmul_naive.cu",
        "matmul_naive",
        "SharedTiling",
        expect![[r#"
        ## 16x16 shared-memory tiles of A and B
        @@ -10,7 +10,15 @@
           int col = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (row < N && col < N) {
        -    float acc = 0.f;
        -    for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];
        -    C[row * N + col] = acc;
        +  __shared__ float kp_As[16][16];
        +  __shared__ float kp_Bs[16][16];
        +  const int kp_tx = threadIdx.x, kp_ty = threadIdx.y;
        +  float acc = 0.f;
        +  for (int kp_t = 0; kp_t < N; kp_t += 16) {
        +    kp_As[kp_ty][kp_tx] = (row < N && kp_t + kp_tx < N) ? A[row * N + kp_t + kp_tx] : float(0);
        +    kp_Bs[kp_ty][kp_tx] = (kp_t + kp_ty < N && col < N) ? B[(kp_t + kp_ty) * N + col] : float(0);
        +    __syncthreads();
        +#pragma unroll
        +    for (int kp_k = 0; kp_k < 16; ++kp_k) acc += kp_As[kp_ty][kp_k] * kp_Bs[kp_k][kp_tx];
        +    __syncthreads();
           }
        +  if (row < N && col < N) C[row * N + col] = acc;
         }
    "#]],
    );
    check(
        "matmul_rect_block.cu",
        "matmul_naive",
        "SharedTiling",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn loop_interchange() {
    check(
        "rowmajor_slow.cu",
        "scale2d",
        "LoopInterchange",
        expect![[r#"
        ## swap threadIdx.x and threadIdx.y so lanes walk the fastest index (2 strided accesses)
        @@ -7,4 +7,4 @@
         __global__ void scale2d(float* out, const float* a, int N) {
        -  int r = blockIdx.x * blockDim.x + threadIdx.x;
        -  int c = blockIdx.y * blockDim.y + threadIdx.y;
        +  int r = blockIdx.x * blockDim.x + threadIdx.y;
        +  int c = blockIdx.y * blockDim.y + threadIdx.x;
           if (r < N && c < N) out[r * N + c] = 2.f * a[r * N + c];
    "#]],
    );
    // threadIdx.x already walks the fastest index of B and C.
    check(
        "matmul_naive.cu",
        "matmul_naive",
        "LoopInterchange",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn privatize_atomics() {
    check(
        "bench/histogram.cu",
        "histogram",
        "PrivatizeAtomics",
        expect![[r#"
        ## 256 bins of bins privatized in shared memory, 264 blocks at most, grid-stride
        @@ -9,4 +9,20 @@
         __global__ void histogram(unsigned* bins, unsigned char* data, int n) {
        -  int i = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (i < n) atomicAdd(&bins[data[i]], 1u);
        +  __shared__ unsigned kp_bins[256];
        +  const unsigned kp_blocks = gridDim.x < 264u ? gridDim.x : 264u;
        +  if (blockIdx.x >= kp_blocks) return;
        +  for (unsigned kp_j = threadIdx.x; kp_j < 256u; kp_j += blockDim.x) kp_bins[kp_j] = 0;
        +  __syncthreads();
        +  for (long long kp_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kp_i < (long long)gridDim.x * blockDim.x; kp_i += (long long)kp_blocks * blockDim.x) {
        +    const int i = (int)kp_i;
        +    if (i < n) {
        +      const auto kp_b = data[i];
        +      if ((unsigned long long)kp_b < 256ull) atomicAdd(&kp_bins[kp_b], 1u);
        +      else atomicAdd(&bins[kp_b], 1u);
        +    }
        +  }
        +  __syncthreads();
        +  for (unsigned kp_j = threadIdx.x; kp_j < 256u; kp_j += blockDim.x) {
        +    const unsigned kp_c = kp_bins[kp_j];
        +    if (kp_c != 0) atomicAdd(&bins[kp_j], kp_c);
        +  }
         }
        ## 256 bins of bins privatized in shared memory, 1056 blocks at most, grid-stride
        @@ -9,4 +9,20 @@
         __global__ void histogram(unsigned* bins, unsigned char* data, int n) {
        -  int i = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (i < n) atomicAdd(&bins[data[i]], 1u);
        +  __shared__ unsigned kp_bins[256];
        +  const unsigned kp_blocks = gridDim.x < 1056u ? gridDim.x : 1056u;
        +  if (blockIdx.x >= kp_blocks) return;
        +  for (unsigned kp_j = threadIdx.x; kp_j < 256u; kp_j += blockDim.x) kp_bins[kp_j] = 0;
        +  __syncthreads();
        +  for (long long kp_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kp_i < (long long)gridDim.x * blockDim.x; kp_i += (long long)kp_blocks * blockDim.x) {
        +    const int i = (int)kp_i;
        +    if (i < n) {
        +      const auto kp_b = data[i];
        +      if ((unsigned long long)kp_b < 256ull) atomicAdd(&kp_bins[kp_b], 1u);
        +      else atomicAdd(&bins[kp_b], 1u);
        +    }
        +  }
        +  __syncthreads();
        +  for (unsigned kp_j = threadIdx.x; kp_j < 256u; kp_j += blockDim.x) {
        +    const unsigned kp_c = kp_bins[kp_j];
        +    if (kp_c != 0) atomicAdd(&bins[kp_j], kp_c);
        +  }
         }
        ## 256 bins of bins privatized in shared memory, 4224 blocks at most, grid-stride
        @@ -9,4 +9,20 @@
         __global__ void histogram(unsigned* bins, unsigned char* data, int n) {
        -  int i = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (i < n) atomicAdd(&bins[data[i]], 1u);
        +  __shared__ unsigned kp_bins[256];
        +  const unsigned kp_blocks = gridDim.x < 4224u ? gridDim.x : 4224u;
        +  if (blockIdx.x >= kp_blocks) return;
        +  for (unsigned kp_j = threadIdx.x; kp_j < 256u; kp_j += blockDim.x) kp_bins[kp_j] = 0;
        +  __syncthreads();
        +  for (long long kp_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kp_i < (long long)gridDim.x * blockDim.x; kp_i += (long long)kp_blocks * blockDim.x) {
        +    const int i = (int)kp_i;
        +    if (i < n) {
        +      const auto kp_b = data[i];
        +      if ((unsigned long long)kp_b < 256ull) atomicAdd(&kp_bins[kp_b], 1u);
        +      else atomicAdd(&bins[kp_b], 1u);
        +    }
        +  }
        +  __syncthreads();
        +  for (unsigned kp_j = threadIdx.x; kp_j < 256u; kp_j += blockDim.x) {
        +    const unsigned kp_c = kp_bins[kp_j];
        +    if (kp_c != 0) atomicAdd(&bins[kp_j], kp_c);
        +  }
         }
    "#]],
    );
    // 65536 bins do not fit the shared copy.
    check(
        "own/hist_refused.cu",
        "hist_wide",
        "PrivatizeAtomics",
        expect![[r#"
        no rewrite
    "#]],
    );
    // Without a spec the bins' count is unknown.
    check(
        "own/hist_refused.cu",
        "hist_unknown",
        "PrivatizeAtomics",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn coarsen_reduce() {
    check(
        "own/structural/sumsq_shared_literal_tree.cu",
        "sum_squares",
        "CoarsenReduce",
        expect![[r#"
        ## coarsened sum into acc: 264 blocks at most, each summing its value over the original blocks it stands for; the block's reduction as written
        @@ -9,2 +9,4 @@
         __global__ void sum_squares(const float* x, float* acc, int n) {
        +  const unsigned kp_blocks = gridDim.x < 264u ? gridDim.x : 264u;
        +  if (blockIdx.x >= kp_blocks) return;
           __shared__ float buf[256];
        @@ -12,3 +14,8 @@
           int gid = blockIdx.x * blockDim.x + tid;
        -  buf[tid] = gid < n ? x[gid] * x[gid] : 0.f;
        +  float kp_v = 0;
        +  for (long long kp_b = blockIdx.x; kp_b < (long long)gridDim.x; kp_b += kp_blocks) {
        +    int gid = kp_b * blockDim.x + tid;
        +    kp_v += (float)(gid < n ? x[gid] * x[gid] : 0.f);
        +  }
        +  buf[tid] = kp_v;
           __syncthreads();
        ## coarsened sum into acc: 1056 blocks at most, each summing its value over the original blocks it stands for; the block's reduction as written
        @@ -9,2 +9,4 @@
         __global__ void sum_squares(const float* x, float* acc, int n) {
        +  const unsigned kp_blocks = gridDim.x < 1056u ? gridDim.x : 1056u;
        +  if (blockIdx.x >= kp_blocks) return;
           __shared__ float buf[256];
        @@ -12,3 +14,8 @@
           int gid = blockIdx.x * blockDim.x + tid;
        -  buf[tid] = gid < n ? x[gid] * x[gid] : 0.f;
        +  float kp_v = 0;
        +  for (long long kp_b = blockIdx.x; kp_b < (long long)gridDim.x; kp_b += kp_blocks) {
        +    int gid = kp_b * blockDim.x + tid;
        +    kp_v += (float)(gid < n ? x[gid] * x[gid] : 0.f);
        +  }
        +  buf[tid] = kp_v;
           __syncthreads();
        ## coarsened sum into acc: 4224 blocks at most, each summing its value over the original blocks it stands for; the block's reduction as written
        @@ -9,2 +9,4 @@
         __global__ void sum_squares(const float* x, float* acc, int n) {
        +  const unsigned kp_blocks = gridDim.x < 4224u ? gridDim.x : 4224u;
        +  if (blockIdx.x >= kp_blocks) return;
           __shared__ float buf[256];
        @@ -12,3 +14,8 @@
           int gid = blockIdx.x * blockDim.x + tid;
        -  buf[tid] = gid < n ? x[gid] * x[gid] : 0.f;
        +  float kp_v = 0;
        +  for (long long kp_b = blockIdx.x; kp_b < (long long)gridDim.x; kp_b += kp_blocks) {
        +    int gid = kp_b * blockDim.x + tid;
        +    kp_v += (float)(gid < n ? x[gid] * x[gid] : 0.f);
        +  }
        +  buf[tid] = kp_v;
           __syncthreads();
    "#]],
    );
    check(
        "own/structural/dot_template_block_atomic.cu",
        "dot_block",
        "CoarsenReduce",
        expect![[r#"
            ## coarsened sum into y: 264 blocks at most, each summing its value over the original blocks it stands for; the block's reduction as written
            @@ -13,5 +13,11 @@
             __global__ void dot_block(float *a, float *b, float *y, int n) {
            +  const unsigned kp_blocks = gridDim.x < 264u ? gridDim.x : 264u;
            +  if (blockIdx.x >= kp_blocks) return;
               __shared__ float partial[THREADS / 32];
               int i = blockIdx.x * THREADS + threadIdx.x;
            -  float v = i < n ? a[i] * b[i] : 0.0f;
            +  float v = 0;
            +  for (long long kp_b = blockIdx.x; kp_b < (long long)gridDim.x; kp_b += kp_blocks) {
            +    int i = kp_b * THREADS + threadIdx.x;
            +    v += (float)(i < n ? a[i] * b[i] : 0.0f);
            +  }
               for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
            ## coarsened sum into y: 1056 blocks at most, each summing its value over the original blocks it stands for; the block's reduction as written
            @@ -13,5 +13,11 @@
             __global__ void dot_block(float *a, float *b, float *y, int n) {
            +  const unsigned kp_blocks = gridDim.x < 1056u ? gridDim.x : 1056u;
            +  if (blockIdx.x >= kp_blocks) return;
               __shared__ float partial[THREADS / 32];
               int i = blockIdx.x * THREADS + threadIdx.x;
            -  float v = i < n ? a[i] * b[i] : 0.0f;
            +  float v = 0;
            +  for (long long kp_b = blockIdx.x; kp_b < (long long)gridDim.x; kp_b += kp_blocks) {
            +    int i = kp_b * THREADS + threadIdx.x;
            +    v += (float)(i < n ? a[i] * b[i] : 0.0f);
            +  }
               for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
            ## coarsened sum into y: 4224 blocks at most, each summing its value over the original blocks it stands for; the block's reduction as written
            @@ -13,5 +13,11 @@
             __global__ void dot_block(float *a, float *b, float *y, int n) {
            +  const unsigned kp_blocks = gridDim.x < 4224u ? gridDim.x : 4224u;
            +  if (blockIdx.x >= kp_blocks) return;
               __shared__ float partial[THREADS / 32];
               int i = blockIdx.x * THREADS + threadIdx.x;
            -  float v = i < n ? a[i] * b[i] : 0.0f;
            +  float v = 0;
            +  for (long long kp_b = blockIdx.x; kp_b < (long long)gridDim.x; kp_b += kp_blocks) {
            +    int i = kp_b * THREADS + threadIdx.x;
            +    v += (float)(i < n ? a[i] * b[i] : 0.0f);
            +  }
               for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
        "#]],
    );
    check(
        "bench/reduction.cu",
        "reduce_sum",
        "CoarsenReduce",
        expect![[r#"
        ## coarsened sum into total: 264 blocks at most, grid-stride register sums, warp shuffles, one atomicAdd per block
        @@ -9,12 +9,18 @@
         __global__ void reduce_sum(float* total, float* x, int n) {
        -  __shared__ float sdata[256];
        -  unsigned tid = threadIdx.x;
        -  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        -  sdata[tid] = i < n ? x[i] : 0.0f;
        +  const unsigned kp_blocks = gridDim.x < 264u ? gridDim.x : 264u;
        +  if (blockIdx.x >= kp_blocks) return;
        +  float kp_v = 0;
        +  for (long long kp_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kp_i < (long long)gridDim.x * blockDim.x; kp_i += (long long)kp_blocks * blockDim.x) {
        +    const unsigned i = (unsigned)kp_i;
        +    kp_v += (float)(i < n ? x[i] : 0.0f);
        +  }
        +  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +  __shared__ float kp_warp[32];
        +  if ((threadIdx.x & 31) == 0) kp_warp[threadIdx.x >> 5] = kp_v;
           __syncthreads();
        -  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        -    if (tid < s) sdata[tid] += sdata[tid + s];
        -    __syncthreads();
        +  if (threadIdx.x < 32) {
        +    kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : (float)0;
        +    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +    if (threadIdx.x == 0) atomicAdd(total, kp_v);
           }
        -  if (tid == 0) atomicAdd(total, sdata[0]);
         }
        ## coarsened sum into total: 1056 blocks at most, grid-stride register sums, warp shuffles, one atomicAdd per block
        @@ -9,12 +9,18 @@
         __global__ void reduce_sum(float* total, float* x, int n) {
        -  __shared__ float sdata[256];
        -  unsigned tid = threadIdx.x;
        -  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        -  sdata[tid] = i < n ? x[i] : 0.0f;
        +  const unsigned kp_blocks = gridDim.x < 1056u ? gridDim.x : 1056u;
        +  if (blockIdx.x >= kp_blocks) return;
        +  float kp_v = 0;
        +  for (long long kp_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kp_i < (long long)gridDim.x * blockDim.x; kp_i += (long long)kp_blocks * blockDim.x) {
        +    const unsigned i = (unsigned)kp_i;
        +    kp_v += (float)(i < n ? x[i] : 0.0f);
        +  }
        +  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +  __shared__ float kp_warp[32];
        +  if ((threadIdx.x & 31) == 0) kp_warp[threadIdx.x >> 5] = kp_v;
           __syncthreads();
        -  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        -    if (tid < s) sdata[tid] += sdata[tid + s];
        -    __syncthreads();
        +  if (threadIdx.x < 32) {
        +    kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : (float)0;
        +    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +    if (threadIdx.x == 0) atomicAdd(total, kp_v);
           }
        -  if (tid == 0) atomicAdd(total, sdata[0]);
         }
        ## coarsened sum into total: 4224 blocks at most, grid-stride register sums, warp shuffles, one atomicAdd per block
        @@ -9,12 +9,18 @@
         __global__ void reduce_sum(float* total, float* x, int n) {
        -  __shared__ float sdata[256];
        -  unsigned tid = threadIdx.x;
        -  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        -  sdata[tid] = i < n ? x[i] : 0.0f;
        +  const unsigned kp_blocks = gridDim.x < 4224u ? gridDim.x : 4224u;
        +  if (blockIdx.x >= kp_blocks) return;
        +  float kp_v = 0;
        +  for (long long kp_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kp_i < (long long)gridDim.x * blockDim.x; kp_i += (long long)kp_blocks * blockDim.x) {
        +    const unsigned i = (unsigned)kp_i;
        +    kp_v += (float)(i < n ? x[i] : 0.0f);
        +  }
        +  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +  __shared__ float kp_warp[32];
        +  if ((threadIdx.x & 31) == 0) kp_warp[threadIdx.x >> 5] = kp_v;
           __syncthreads();
        -  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        -    if (tid < s) sdata[tid] += sdata[tid + s];
        -    __syncthreads();
        +  if (threadIdx.x < 32) {
        +    kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : (float)0;
        +    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +    if (threadIdx.x == 0) atomicAdd(total, kp_v);
           }
        -  if (tid == 0) atomicAdd(total, sdata[0]);
         }
    "#]],
    );
    check(
        "atomic_sum.cu",
        "sum_atomic",
        "CoarsenReduce",
        expect![[r#"
        ## coarsened sum into total: 264 blocks at most, grid-stride register sums, warp shuffles, one atomicAdd per block
        @@ -7,4 +7,18 @@
         __global__ void sum_atomic(float* total, const float* x, int n) {
        -  int i = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (i < n) atomicAdd(total, x[i]);
        +  const unsigned kp_blocks = gridDim.x < 264u ? gridDim.x : 264u;
        +  if (blockIdx.x >= kp_blocks) return;
        +  float kp_v = 0;
        +  for (long long kp_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kp_i < (long long)gridDim.x * blockDim.x; kp_i += (long long)kp_blocks * blockDim.x) {
        +    const int i = (int)kp_i;
        +    if (i < n) kp_v += (float)(x[i]);
        +  }
        +  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +  __shared__ float kp_warp[32];
        +  if ((threadIdx.x & 31) == 0) kp_warp[threadIdx.x >> 5] = kp_v;
        +  __syncthreads();
        +  if (threadIdx.x < 32) {
        +    kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : (float)0;
        +    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +    if (threadIdx.x == 0) atomicAdd(total, kp_v);
        +  }
         }
        ## coarsened sum into total: 1056 blocks at most, grid-stride register sums, warp shuffles, one atomicAdd per block
        @@ -7,4 +7,18 @@
         __global__ void sum_atomic(float* total, const float* x, int n) {
        -  int i = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (i < n) atomicAdd(total, x[i]);
        +  const unsigned kp_blocks = gridDim.x < 1056u ? gridDim.x : 1056u;
        +  if (blockIdx.x >= kp_blocks) return;
        +  float kp_v = 0;
        +  for (long long kp_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kp_i < (long long)gridDim.x * blockDim.x; kp_i += (long long)kp_blocks * blockDim.x) {
        +    const int i = (int)kp_i;
        +    if (i < n) kp_v += (float)(x[i]);
        +  }
        +  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +  __shared__ float kp_warp[32];
        +  if ((threadIdx.x & 31) == 0) kp_warp[threadIdx.x >> 5] = kp_v;
        +  __syncthreads();
        +  if (threadIdx.x < 32) {
        +    kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : (float)0;
        +    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +    if (threadIdx.x == 0) atomicAdd(total, kp_v);
        +  }
         }
        ## coarsened sum into total: 4224 blocks at most, grid-stride register sums, warp shuffles, one atomicAdd per block
        @@ -7,4 +7,18 @@
         __global__ void sum_atomic(float* total, const float* x, int n) {
        -  int i = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (i < n) atomicAdd(total, x[i]);
        +  const unsigned kp_blocks = gridDim.x < 4224u ? gridDim.x : 4224u;
        +  if (blockIdx.x >= kp_blocks) return;
        +  float kp_v = 0;
        +  for (long long kp_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kp_i < (long long)gridDim.x * blockDim.x; kp_i += (long long)kp_blocks * blockDim.x) {
        +    const int i = (int)kp_i;
        +    if (i < n) kp_v += (float)(x[i]);
        +  }
        +  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +  __shared__ float kp_warp[32];
        +  if ((threadIdx.x & 31) == 0) kp_warp[threadIdx.x >> 5] = kp_v;
        +  __syncthreads();
        +  if (threadIdx.x < 32) {
        +    kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : (float)0;
        +    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
        +    if (threadIdx.x == 0) atomicAdd(total, kp_v);
        +  }
         }
    "#]],
    );
    // One output per block: the blocks' sums are the result, not one total.
    check(
        "reduce_shared.cu",
        "block_sum",
        "CoarsenReduce",
        expect![[r#"
        no rewrite
    "#]],
    );
    // 16x16 blocks: not whole warps along x.
    check(
        "reduce_2d_block.cu",
        "sum_atomic_2d",
        "CoarsenReduce",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn warp_rows() {
    check(
        "bench/softmax.cu",
        "softmax_rows",
        "WarpRows",
        expect![[r#"
        ## one warp per row (r): lanes stride the columns, accumulators combined by __shfl_xor_sync
        @@ -12,9 +12,15 @@
         __global__ void softmax_rows(float* y, float* x, int rows, int cols) {
        -  int r = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (r >= rows) return;
        -  float m = -1e30f;
        -  for (int c = 0; c < cols; ++c) m = fmaxf(m, x[r * cols + c]);
        -  float s = 0.0f;
        -  for (int c = 0; c < cols; ++c) s += exp(x[r * cols + c] - m);
        -  for (int c = 0; c < cols; ++c) y[r * cols + c] = exp(x[r * cols + c] - m) / s;
        +  const int kp_lane = threadIdx.x & 31;
        +  for (int kp_k = 0; kp_k < 32; ++kp_k) {
        +    int r = blockIdx.x * blockDim.x + (threadIdx.x & ~31u) + kp_k;
        +    if (r >= rows) continue;
        +    float m = -1e30f;
        +    for (int c = kp_lane; c < cols; c += 32) m = fmaxf(m, x[r * cols + c]);
        +    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, kp_o));
        +    float s = 0.0f;
        +    if (kp_lane != 0) s = 0;
        +    for (int c = kp_lane; c < cols; c += 32) s += exp(x[r * cols + c] - m);
        +    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, kp_o);
        +    for (int c = kp_lane; c < cols; c += 32) y[r * cols + c] = exp(x[r * cols + c] - m) / s;
        +  }
         }
    "#]],
    );
    // In place under `if (r < rows) { ... }`, a sum that starts at 1e-12, 96-thread blocks.
    check(
        "own/rows_norm.cu",
        "l2_normalize",
        "WarpRows",
        expect![[r#"
        ## one warp per row (r): lanes stride the columns, accumulators combined by __shfl_xor_sync
        @@ -9,8 +9,12 @@
         __global__ void l2_normalize(float* x, int rows, int cols) {
        -  int r = blockIdx.x * blockDim.x + threadIdx.x;
        -  if (r < rows) {
        +  const int kp_lane = threadIdx.x & 31;
        +  for (int kp_k = 0; kp_k < 32; ++kp_k) {
        +    int r = blockIdx.x * blockDim.x + (threadIdx.x & ~31u) + kp_k;
        +    if (!(r < rows)) continue;
             float s = 1e-12f;
        -    for (int c = 0; c < cols; ++c) s += x[r * cols + c] * x[r * cols + c];
        +    if (kp_lane != 0) s = 0;
        +    for (int c = kp_lane; c < cols; c += 32) s += x[r * cols + c] * x[r * cols + c];
        +    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, kp_o);
             float inv = rsqrtf(s);
        -    for (int c = 0; c < cols; ++c) x[r * cols + c] = x[r * cols + c] * inv;
        +    for (int c = kp_lane; c < cols; c += 32) x[r * cols + c] = x[r * cols + c] * inv;
           }
    "#]],
    );
    // Row r reads row r + 1.
    check(
        "own/rows_refused.cu",
        "next_row_diff",
        "WarpRows",
        expect![[r#"
        no rewrite
    "#]],
    );
    // `s = 0.5f * s + e` is not a reduction lanes can split.
    check(
        "own/rows_refused.cu",
        "running_decay",
        "WarpRows",
        expect![[r#"
        no rewrite
    "#]],
    );
}

#[test]
fn prefetch_l2() {
    check(
        "bench/elementwise_fp64.cu",
        "elementwise",
        "PrefetchL2",
        expect![[r###"
        ## L2 prefetch of x about two waves ahead (blocks along x)
        @@ -11,2 +11,5 @@
           int i = blockIdx.x * blockDim.x + threadIdx.x;
        +  // L2 prefetch of what the same thread of the block kp_ahead blocks later (about two waves) loads.
        +  const int kp_ahead = max(1, (int)__fdividef(524288.0f, (float)(blockDim.x * blockDim.y * blockDim.z)));
        +  if (blockIdx.x + kp_ahead < gridDim.x && ((i + kp_ahead * (int)blockDim.x) < n)) asm volatile("prefetch.global.L2 [%0];" :: "l"(&x[i + kp_ahead * (int)blockDim.x]));
           if (i < n) y[i] = a * x[i] + sqrt(x[i]) * 0.5;
    "###]],
    );
    check(
        "own/copy_rows.cu",
        "copy_rows",
        "PrefetchL2",
        expect![[r###"
        ## L2 prefetch of in about two waves ahead (blocks along y)
        @@ -10,2 +10,5 @@
           int c = blockIdx.y * blockDim.y + threadIdx.x;
        +  // L2 prefetch of what the same thread of the block kp_ahead blocks later (about two waves) loads.
        +  const int kp_ahead = max(1, (int)__fdividef(524288.0f, (float)(blockDim.x * blockDim.y * blockDim.z) * gridDim.x));
        +  if (blockIdx.y + kp_ahead < gridDim.y && (r < w && (c + kp_ahead * (int)blockDim.y) < w)) asm volatile("prefetch.global.L2 [%0];" :: "l"(&in[r * w + (c + kp_ahead * (int)blockDim.y)]));
           if (r < w && c < w) out[r * w + c] = in[r * w + c];
    "###]],
    );
    check(
        "bench/transpose.cu",
        "transpose",
        "PrefetchL2",
        expect![[r###"
        ## L2 prefetch of in about two waves ahead (blocks along y)
        @@ -10,2 +10,5 @@
           int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
        +  // L2 prefetch of what the same thread of the block kp_ahead blocks later (about two waves) loads.
        +  const int kp_ahead = max(1, (int)__fdividef(524288.0f, (float)(blockDim.x * blockDim.y * blockDim.z) * gridDim.x));
        +  if (blockIdx.y + kp_ahead < gridDim.y) asm volatile("prefetch.global.L2 [%0];" :: "l"(&in[(y + kp_ahead * 32) * n + x]));
           tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    "###]],
    );
    check(
        "bench/stencil2d.cu",
        "stencil",
        "PrefetchL2",
        expect![[r###"
        ## L2 prefetch of in about two waves ahead (blocks along y)
        @@ -10,2 +10,5 @@
           int y = blockIdx.y * blockDim.y + threadIdx.y;
        +  // L2 prefetch of what the same thread of the block kp_ahead blocks later (about two waves) loads.
        +  const int kp_ahead = max(1, (int)__fdividef(524288.0f, (float)(blockDim.x * blockDim.y * blockDim.z) * gridDim.x));
        +  if (blockIdx.y + kp_ahead < gridDim.y && !(x >= w || (y + kp_ahead * (int)blockDim.y) >= w) && !(x == 0 || (y + kp_ahead * (int)blockDim.y) == 0 || x == w - 1 || (y + kp_ahead * (int)blockDim.y) == w - 1)) asm volatile("prefetch.global.L2 [%0];" :: "l"(&in[(y + kp_ahead * (int)blockDim.y) * w + x]));
           if (x >= w || y >= w) return;
    "###]],
    );
    check(
        "bench/reduction.cu",
        "reduce_sum",
        "PrefetchL2",
        expect![[r###"
        ## L2 prefetch of x about two waves ahead (blocks along x)
        @@ -12,2 +12,5 @@
           unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        +  // L2 prefetch of what the same thread of the block kp_ahead blocks later (about two waves) loads.
        +  const int kp_ahead = max(1, (int)__fdividef(524288.0f, (float)(blockDim.x * blockDim.y * blockDim.z)));
        +  if (blockIdx.x + kp_ahead < gridDim.x && ((i + kp_ahead * (int)blockDim.x) < n)) asm volatile("prefetch.global.L2 [%0];" :: "l"(&x[i + kp_ahead * (int)blockDim.x]));
           sdata[tid] = i < n ? x[i] : 0.0f;
    "###]],
    );
    // The index stream is prefetched; the gathered `x[idx[i]]` is not (its address needs a load).
    check(
        "own/prefetch_refused.cu",
        "gather",
        "PrefetchL2",
        expect![[r###"
        ## L2 prefetch of idx about two waves ahead (blocks along x)
        @@ -19,2 +19,5 @@
           int i = blockIdx.x * blockDim.x + threadIdx.x;
        +  // L2 prefetch of what the same thread of the block kp_ahead blocks later (about two waves) loads.
        +  const int kp_ahead = max(1, (int)__fdividef(524288.0f, (float)(blockDim.x * blockDim.y * blockDim.z)));
        +  if (blockIdx.x + kp_ahead < gridDim.x && ((i + kp_ahead * (int)blockDim.x) < n)) asm volatile("prefetch.global.L2 [%0];" :: "l"(&idx[i + kp_ahead * (int)blockDim.x]));
           if (i < n) y[i] = x[idx[i]];
    "###]],
    );
    for refused in ["moved_index", "hidden_loads", "row_sums"] {
        assert_eq!(render("own/prefetch_refused.cu", refused, "PrefetchL2"), "no rewrite\n", "{refused}");
    }
}

/// nvcc from `KERNELPRO_NVCC` or the repo's pinned wheel.
fn nvcc() -> PathBuf {
    let path = std::env::var_os("KERNELPRO_NVCC").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc")
    });
    assert!(
        path.exists(),
        "nvcc not found at {}: set KERNELPRO_NVCC or run scripts/setup.sh to install the pinned CUDA wheels",
        path.display()
    );
    path
}

#[test]
fn every_rewrite_compiles_for_sm_90() {
    let nvcc = nvcc();
    let dir = tempfile::tempdir().unwrap();
    let mut compiled = 0;
    for (file, kernel, name) in CASES {
        for (i, rw) in recipe(name).rewrite(&fixture(file), kernel).iter().enumerate() {
            let cu = dir.path().join(format!("{name}_{kernel}_{i}.cu"));
            std::fs::write(&cu, &rw.source).unwrap();
            let out = std::process::Command::new(&nvcc)
                .args(["-arch=sm_90", "-cubin", "-o"])
                .arg(cu.with_extension("cubin"))
                .arg(&cu)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{name} on {kernel} ({}) does not compile:\n{}\n{}",
                rw.note,
                String::from_utf8_lossy(&out.stderr),
                rw.source
            );
            compiled += 1;
        }
    }
    assert_eq!(compiled, 36, "every applying case yields a compiled rewrite");
}

fn propose(source: &str, kernel: &str, tools: &[&str], wanted: usize) -> String {
    let findings: Vec<FindingNote> = tools.iter().map(|t| FindingNote::new(*t, "")).collect();
    let memory = SearchMemory::default();
    let ctx = ProposeContext {
        parent: NodeId(0),
        source,
        depth: 0,
        speedup: Some(1.0),
        best_speedup: 1.0,
        findings: &findings,
        failure: None,
        memory: &memory,
        wanted,
    };
    let proposals = RecipeProposer::new(kernel).propose(&ctx);
    let sources: std::collections::HashSet<&str> = proposals.iter().map(|p| p.source.as_str()).collect();
    assert_eq!(sources.len(), proposals.len(), "duplicate proposals");
    assert!(!sources.contains(source), "proposed the parent itself");
    proposals
        .iter()
        .map(|p| format!("{} answers={:?} note={:?}\n", p.recipe, p.answers, p.note.as_deref().unwrap_or("")))
        .collect()
}

#[test]
fn proposer_puts_structural_then_answering_recipes_first() {
    let text = fixture("kernels.cu");
    expect![[r#"
        GridStrideMap answers=None note="grid-stride map over (i), four units a step through 128-bit streaming loads and stores; float literals (5) and float math calls (0)"
        GridStrideMap answers=None note="grid-stride map over (i); float literals (1) and float math calls (0)"
        GridStrideMap answers=None note="grid-stride map over (i), four units a step through 128-bit streaming loads and stores"
        GridStrideMap answers=None note="grid-stride map over (i)"
        FloatLiterals answers=Some("Fp64Promotion") note="float literals (1) and float math calls (0)"
        VectorizeLoads answers=Some("Vectorization") note="float4 loads of x, y and stores of y where aligned, grid-stride with a scalar tail"
        PrefetchL2 answers=None note="L2 prefetch of x about two waves ahead (blocks along x)"
        RestrictConst answers=None note="__restrict__ y, __restrict__ x"
        Ldg answers=None note="__ldg loads of x"
    "#]].assert_eq(&propose(&text, "saxpy_fp64", &["Fp64Promotion", "Vectorization"], 10));
    expect![[r#"
        GridStrideMap answers=Some("TailEffect") note="grid-stride map over (i), four units a step through 128-bit streaming loads and stores; launch block = 256, grid = ceil_div(N, 1024)"
        GridStrideMap answers=Some("TailEffect") note="grid-stride map over (i), four units a step through 128-bit streaming loads and stores; launch block = 256, grid = min(ceil_div(N, 256), 132 * 8)"
        GridStrideMap answers=Some("TailEffect") note="grid-stride map over (i), four units a step through 128-bit streaming loads and stores; launch block = 512, grid = min(ceil_div(N, 512), 132 * 4)"
        GridStrideMap answers=Some("TailEffect") note="grid-stride map over (i), four units a step through 128-bit streaming loads and stores; launch block = 1024, grid = min(ceil_div(N, 1024), 132 * 2)"
        GridStrideMap answers=Some("TailEffect") note="grid-stride map over (i), four units a step through 128-bit streaming loads and stores"
        GridStrideMap answers=Some("TailEffect") note="grid-stride map over (i), two float4 of units a thread a step through 128-bit streaming loads and stores; launch block = 256, grid = ceil_div(N, 2048)"
        GridStrideMap answers=Some("TailEffect") note="grid-stride map over (i), two float4 of units a thread a step through 128-bit streaming loads and stores; launch block = 512, grid = ceil_div(N, 4096)"
        GridStrideMap answers=Some("TailEffect") note="grid-stride map over (i)"
        GridStrideMap answers=Some("TailEffect") note="grid-stride map over (i); launch block = 256, grid = min(ceil_div(N, 256), 132 * 8)"
        GridStrideMap answers=Some("TailEffect") note="grid-stride map over (i); launch block = 512, grid = min(ceil_div(N, 512), 132 * 4)"
        GridStrideMap answers=Some("TailEffect") note="grid-stride map over (i); launch block = 1024, grid = min(ceil_div(N, 1024), 132 * 2)"
        TuneParameter answers=Some("TailEffect") note="tune B = 256"
        PrefetchL2 answers=None note="L2 prefetch of x about two waves ahead (blocks along x)"
    "#]].assert_eq(&propose(&fixture("tune_block.cu"), "saxpy", &["TailEffect"], 3));
    expect![[r#"
        GridStrideMap answers=None note="grid-stride map over (i), four units a step through 128-bit streaming loads and stores; float literals (5) and float math calls (0)"
        GridStrideMap answers=None note="grid-stride map over (i); float literals (1) and float math calls (0)"
    "#]].assert_eq(&propose(&text, "saxpy_fp64", &[], 2));
}

/// At every expansion the structural candidates (each structure, then its
/// launch variants) come before the other rewrites, and the micro-optimizations
/// last, even when a finding only they answer comes first.
#[test]
fn structural_candidates_come_before_micro_ones() {
    let tier =
        |name: &str| crate::all().into_iter().find(|r| r.name() == name).map(|r| r.tier()).expect("a built-in recipe");
    for (file, kernel) in [("kernels.cu", "saxpy_fp64"), ("kernels.cu", "strided_copy"), ("tune_block.cu", "saxpy")] {
        let text = fixture(file);
        let findings: Vec<FindingNote> =
            ["MissingRestrict", "RegisterSpill", "Uncoalesced"].iter().map(|t| FindingNote::new(*t, "")).collect();
        let memory = SearchMemory::default();
        let ctx = ProposeContext {
            parent: NodeId(0),
            source: &text,
            depth: 0,
            speedup: Some(1.0),
            best_speedup: 1.0,
            findings: &findings,
            failure: None,
            memory: &memory,
            wanted: 100,
        };
        let tiers: Vec<(crate::Tier, String)> =
            RecipeProposer::new(kernel).propose(&ctx).iter().map(|p| (tier(&p.recipe), p.recipe.clone())).collect();
        assert!(tiers.windows(2).all(|w| w[0].0 <= w[1].0), "{kernel}: {tiers:?}");
        assert!(tiers.iter().any(|t| t.0 == crate::Tier::Micro), "{kernel}: {tiers:?}");
    }
}

/// Within the structural tier, the expert form of the kernel's own pattern comes first: a GEMM's
/// tiles before a warp per output (the findings name codes both answer).
#[test]
fn the_kernels_pattern_orders_its_tier() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/kernelbench/tasks/1_Square_matmul.cu"),
    )
    .unwrap();
    let first: Vec<String> = propose(&text, "matmul_square", &["RowWalk", "UncoalescedAccess"], 3)
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    // Each structural recipe's rewrites are the points of one form, given together and counted as
    // one proposal: the GEMM's tile points, then a warp per output's, then the first rewrite of the
    // next tier (the size `n` as a constant).
    let mut forms = first.clone();
    forms.dedup();
    assert_eq!(forms, ["TiledContraction", "WarpUnits", "SpecializeScalars"], "{first:?}");
}

/// A float kernel computing in FP64 only through double literals and math calls gets its
/// structural rewrites with float math first (and as written after them).
#[test]
fn structural_rewrites_of_fp64_literal_kernels_come_with_float_math_first() {
    let text = fixture("../naive/map/gelu_double_literals.cu");
    let got = propose(&text, "gelu_kernel", &[], 30);
    let recipes: Vec<&str> = got.lines().map(|l| l.split(' ').next().unwrap()).collect();
    let float_first = got.lines().take_while(|l| l.contains("float math calls")).count();
    assert!(float_first >= 1 && recipes[..float_first].iter().all(|r| *r == "GridStrideMap"), "{got}");
}
