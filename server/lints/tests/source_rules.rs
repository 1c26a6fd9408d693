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
        launches: &no_launch,
        default_block: 256,
        block_dims: &|_: &str| None,
        spec_values: &|_: &str| Vec::new(),
    };
    expected.assert_eq(&render(&run_all(&input)));
}

#[test]
fn restrict_only_where_aliasing_costs() {
    // The same elementwise and row computations in several styles; a note only
    // where a store and a load of two pointers share a loop, or a store sits
    // between two loads of another pointer.
    check(
        r#"__device__ void store(float* p, float v) { p[0] = v; }
__global__ void elementwise(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * 2.f;
}
__global__ void unused_and_reduction(float* y, const float* x, const float* unused, int n) {
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc += x[k];
  y[threadIdx.x] = acc;
}
__global__ void row_index_loop(float* y, const float* x, const float* w, int C) {
  int r = blockIdx.x;
  for (int c = threadIdx.x; c < C; c += blockDim.x) y[r * C + c] = x[r * C + c] * w[c];
}
__global__ void row_pointer_loop(float* y, const float* __restrict__ x, int C) {
  const float* row = x + blockIdx.x * C;
  float* out = y + blockIdx.x * C;
  for (int c = 0; c < C; ++c) out[c] = row[c] * 2.f;
}
__global__ void reload_around_store(float* y, float* x) {
  y[0] = x[0];
  y[1] = x[0] + 1.f;
}
__global__ void histogram(int* hist, const int* keys, int n) {
  for (int j = threadIdx.x; j < n; j += blockDim.x) atomicAdd(&hist[keys[j]], 1);
}
__global__ void helper_writes(float* a, const float* b, int n) {
  for (int j = 0; j < n; ++j) store(a + j, b[j]);
}
__global__ void all_restrict(float* __restrict__ y, const float* __restrict__ x, int n) {
  for (int j = 0; j < n; ++j) y[j] = x[j];
}
"#,
        expect![[r#"
            ScalarLoads 4:21-4:25 `x[i]`: one 4-byte load per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions
            MissedReuse 8:38-8:42 `x[k]`: every lane along threadIdx.x reads the same elements over `k` and reduces them again, though each writes its own output: the reduction is recomputed by every thread of the row
            MissingRestrict 11:42-11:56 `x` is loaded in the same loop as a store through `y`, and neither is `__restrict__`: the compiler must assume they overlap
            MissingRestrict 15:34-15:42 `x` is loaded in the same loop as a store through `y`, and `y` is not `__restrict__`: the compiler must assume they overlap
            MissingRestrict 20:47-20:55 `x` is loaded 2 times around a store through `y`, and neither is `__restrict__`: the compiler must assume they overlap
            MissingRestrict 24:38-24:53 `keys` is loaded in the same loop as a store through `hist`, and neither is `__restrict__`: the compiler must assume they overlap
            AtomicContention 25:53-25:81 `atomicAdd(&hist[keys[j]], 1)`: lanes update bins chosen by the data (`hist[⟨keys[j]⟩]`): lanes with equal values serialize on one address, and every update goes to global memory
            MissingRestrict 27:41-27:55 `b` is loaded in the same loop as a store through `a`, and neither is `__restrict__`: the compiler must assume they overlap"#]],
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
            RowWalk 6:36-6:49 each thread walks a row of `in` alone along `k` (`n` elements, one per iteration) while neighbouring lanes are `n` floats apart: a warp reads 32 rows at once, 32 sectors per request instead of 4"#]],
    );
}

/// 20,000 levels of parentheses, or a sum of 20,000 terms, in a shared index
/// and a constant: the folds give up instead of overflowing a 2 MiB stack (the
/// recursive folds overflowed here; 100,000 levels pass too, in 28 s of debug
/// build, most of it tree-sitter's parse).
#[test]
fn deep_expressions_do_not_overflow_the_stack() {
    const DEPTH: usize = 20_000;
    let (open, close) = ("(".repeat(DEPTH), ")".repeat(DEPTH));
    let sum = " + 1".repeat(DEPTH);
    let src = format!(
        "const int W = {open}32{close};\nconst int S = 1{sum};\n__global__ void k(float* out) {{\n  __shared__ float s[1024];\n  s[{open}threadIdx.x * W{close}] = 1.f;\n  s[threadIdx.x * 32{sum}] = 2.f;\n  out[0] = s[0];\n}}\n"
    );
    let rendered = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let source = kernelpro_source::parse(&src);
            let no_launch = |_: &str| None;
            let input = LintInput {
                path: "k.cu",
                text: &src,
                source: &source,
                sass: None,
                resources: &[],
                arch: "sm_90",
                launches: &no_launch,
                default_block: 256,
                block_dims: &|_: &str| None,
                spec_values: &|_: &str| Vec::new(),
            };
            render(&run_all(&input))
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
    assert!(!rendered.contains("panicked"), "{rendered}");
}

/// Issue 32: a one-thread-per-row softmax (three loops over the row: a max, an
/// exponent stored per element with its sum, a division stored per element)
/// gets one finding per walked line, RowWalk alone (no UncoalescedAccess
/// repeating it), and the same advice on every loop: the kernel reduces rows,
/// so a warp per row.
#[test]
fn one_row_walk_finding_per_line_with_one_advice_per_kernel() {
    let src = r#"__global__ void softmax_rows(float* __restrict__ out, const float* __restrict__ inp, int N, int C) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    const float* row = inp + i * C;
    float* o = out + i * C;
    float m = -INFINITY;
    for (int j = 0; j < C; j++) m = fmaxf(m, row[j]);
    float sum = 0.f;
    for (int j = 0; j < C; j++) {
      o[j] = expf(row[j] - m);
      sum += o[j];
    }
    for (int j = 0; j < C; j++) o[j] /= sum;
  }
}
"#;
    let source = kernelpro_source::parse(src);
    let no_launch = |_: &str| None;
    let input = LintInput {
        path: "k.cu",
        text: src,
        source: &source,
        sass: None,
        resources: &[],
        arch: "sm_90",
        launches: &no_launch,
        default_block: 256,
        block_dims: &|_: &str| None,
        spec_values: &|_: &str| Vec::new(),
    };
    let found = run_all(&input);
    let model: Vec<_> =
        found.iter().filter(|f| matches!(f.code.as_deref(), Some("RowWalk" | "UncoalescedAccess"))).collect();
    let mut lines: Vec<u32> = model.iter().map(|f| f.span.start.line).collect();
    lines.dedup();
    assert_eq!(lines.len(), model.len(), "two findings on one line: {}", render(&found));
    assert!(model.iter().all(|f| f.code.as_deref() == Some("RowWalk")), "{}", render(&found));
    assert_eq!(model.len(), 3, "one per loop: {}", render(&found));
    let advice: Vec<&str> =
        model.iter().map(|f| f.guidance.as_deref().unwrap().split(':').next().unwrap_or("")).collect();
    assert!(advice.iter().all(|a| a.starts_with("Give each row a warp")), "{advice:?}");
}

/// Issue 32: a thread that walks from its own start to a common end (the
/// scalar tail after `float4`s) is no row walk; and an elementwise statement's
/// every scalar load is named (`x[i]` and `y[i]`), in one finding on its line.
#[test]
fn float4_tails_are_coalesced_and_every_scalar_load_is_named() {
    check(
        r#"__global__ void gelu_float4(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 3 < n) {
    float4 v = *reinterpret_cast<const float4*>(&x[i]);
    *reinterpret_cast<float4*>(&y[i]) = make_float4(v.x, v.y, v.z, v.w);
  } else {
    for (int k = i; k < n; k++) y[k] = x[k] * 0.5f;
  }
}
__global__ void saxpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"#,
        expect![
            "ScalarLoads 12:25-12:36 `x[i]`, `y[i]`: one 4-byte load each per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions"
        ],
    );
}

/// Issue 32: `float4` loads and stores written through a function-like macro
/// whose body holds the cast (`#define F4(p) (reinterpret_cast<float4*>(&(p))[0])`,
/// used as `F4(a[i])`) are 16-byte accesses, coalesced: no `UncoalescedAccess`
/// and no `ScalarLoads` on them, with or without a bound check, as the same
/// kernel written with the cast inline.
#[test]
fn float4_through_a_macro_is_one_vector_access() {
    check(
        r#"#define F4(p) (reinterpret_cast<float4*>(&(p))[0])
#define CF4(p) (reinterpret_cast<const float4*>(&(p))[0])
__global__ void add4(float* a, float* b, float* c) {
  int i = (threadIdx.x + blockIdx.x * blockDim.x) * 4;
  float4 x = F4(a[i]);
  float4 y = F4(b[i]);
  float4 z;
  z.x = x.x + y.x;
  z.y = x.y + y.y;
  z.z = x.z + y.z;
  z.w = x.w + y.w;
  F4(c[i]) = z;
}
__global__ void relu4(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = 4 * (blockDim.x * blockIdx.x + threadIdx.x);
  if (i < n) {
    float4 v = CF4(x[i]);
    F4(y[i]) = make_float4(fmaxf(v.x, 0.f), fmaxf(v.y, 0.f), fmaxf(v.z, 0.f), fmaxf(v.w, 0.f));
  }
}
"#,
        expect![""],
    );
}
