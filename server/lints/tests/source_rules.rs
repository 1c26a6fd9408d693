//! Edge cases of the source-side rules on small inline kernels, without SASS or
//! resources: what counts as a write, as a thread-dependent condition, as a
//! conflicting shared index, as a contiguous per-thread walk.

mod common;

use common::render;
use expect_test::{Expect, expect};
use kernelpro_lints::{LintInput, run_all};

fn check(src: &str, expected: Expect) {
    let source = kernelpro_source::parse(src);
    let no_launch = |_: &str| None;
    let input = LintInput {
        path: "k.cu",
        text: src,
        source: &source,
        sass: None,
        resources: &[],
        arch: "sm_90",
        block_sizes: &no_launch,
        default_block: 256,
        block_dims: &|_: &str| None,
    };
    expected.assert_eq(&render(&run_all(&input)));
}

#[test]
fn pointers_written_by_atomics_increments_calls_or_copies_are_not_read_only() {
    check(
        r#"__device__ void store(float* p, float v) { p[0] = v; }
__global__ void k(float* a, float* b, float* c, float* d, float* e, float* f, const float* g, int n) {
  atomicAdd(&a[0], 1.f);
  b[1]++;
  store(c, 2.f);
  float* alias = d; alias[0] = 1.f;
  *(e + 2) = f[3] + g[4];
}
"#,
        expect![[r#"
            MissingRestrict 2:69-2:77 `f` is only read in `k` but is declared without `const` and `__restrict__`
            MissingRestrict 2:79-2:93 `g` is only read in `k` but is declared without `__restrict__`
            AtomicContention 3:3-3:24 `atomicAdd(&a[0], 1.f)`: every thread of the block atomically updates the same address `a[0]`: the updates serialize (32 lanes on one address per warp request)"#]],
    );
}

#[test]
fn read_only_kernel_without_writes_needs_only_const() {
    check(
        "__global__ void k(const float* x, float* y) { float s = x[0] + y[1]; (void)s; }\n",
        expect![[
            r#"MissingRestrict 1:35-1:43 `y` is only read in `k` but is declared without `const`"#
        ]],
    );
}

#[test]
fn barriers_under_thread_dependent_conditions() {
    check(
        r#"__global__ void k(float* __restrict__ p, int n) {
  int lane = threadIdx.x & 31;
  int warp = lane / 8;
  if (blockIdx.x > 2) { __syncthreads(); }
  for (int s = 0; s < n; ++s) { __syncthreads(); }
  while (warp < 2) { __syncthreads_or(1); }
  p[0] = threadIdx.y > 0 ? (__syncthreads(), 1.f) : 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) { __syncthreads(); }
}
"#,
        expect![[r#"
            SyncInDivergentBranch 6:22-6:41 `__syncthreads_or(1)` inside a branch on the thread index (`warp < 2`): threads that skip it never reach the barrier
            SyncInDivergentBranch 7:29-7:44 `__syncthreads()` inside a branch on the thread index (`threadIdx.y > 0`): threads that skip it never reach the barrier
            SyncInDivergentBranch 8:55-8:70 `__syncthreads()` inside a branch on the thread index (`i < n`): threads that skip it never reach the barrier"#]],
    );
}

#[test]
fn shared_index_patterns() {
    check(
        r#"#define W 64
const int PAD = 1;
__shared__ float g[32][W];
__global__ void k(float* __restrict__ out) {
  __shared__ double d[32][16];
  __shared__ float ok[32][32 + PAD];
  __shared__ float s[1024];
  int t = threadIdx.x + blockIdx.x;
  out[0] = g[t][0] + d[threadIdx.x][1] + ok[t][0] + g[0][t];
  out[1] = s[t * 64 + 3] + s[t * 33] + s[threadIdx.y * 32];
}
"#,
        expect![[r#"
            SharedBankConflict 9:12-9:19 `g[t][0]`: lanes are 64 words apart in `g`: 32-way bank conflict (the request is served in 32 passes)
            SharedBankConflict 10:12-10:25 `s[t * 64 + 3]`: lanes are 64 words apart in `s`: 32-way bank conflict (the request is served in 32 passes)"#]],
    );
}

#[test]
fn contiguous_per_thread_loads() {
    check(
        r#"__global__ void k(float* __restrict__ out, const float* __restrict__ in, const float4* __restrict__ v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float s = in[2 * i] + in[2 * i + 1];
  for (int k = 0; k < n; ++k) s += in[i + k] + in[k * n + i] + v[i * n + k].x;
  for (int k = 0; k < n; k += 2) s += in[i * n + k];
  for (int k = 0; k < n; k++) s += in[k + i * n];
  out[i] = s;
}
"#,
        expect![[r#"
            ScalarLoads 3:13-3:22 2 scalar loads of neighbouring elements of `in` (`in[2 * i]` … `in[2 * i + 1]`) per thread, lanes 2 elements apart: 1 64-bit load would do
            MissedReuse 4:36-4:45 `in[i + k]`: neighbouring threads read overlapping elements of `in`, so each element is loaded from global memory by several threads (`in[i + k]` moves with the lane and with `k` alike: lane `l` reads elements `l + k` over the loop)
            UncoalescedAccess 5:39-5:52 `in[i * n + k]` reads `in` where lanes are `n` floats apart: 32 sectors per request instead of 4
            RowWalk 6:3-6:50 each thread walks a row of `in` alone along `k` (`n` elements, one per iteration) while neighbouring lanes are `n` floats apart: a warp reads 32 rows at once, 32 sectors per request instead of 4
            UncoalescedAccess 6:36-6:49 `in[k + i * n]` reads `in` where lanes are `n` floats apart: 32 sectors per request instead of 4"#]],
    );
}
