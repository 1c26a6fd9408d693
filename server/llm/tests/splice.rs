//! Splicing a reply's kernel into the file, per the optimizer contract.

use expect_test::{Expect, expect};
use kernelpro_llm::KernelSite;

const SOURCE: &str = r#"#include <cstdio>
// kernelpro: let N = 1 << 20

__device__ float shared_helper(float v) { return v + 1.0f; }

__device__ float old_helper(float v) { return v; }

// Scales y.
// kernelpro: tune B in [128, 256, 512]
// kernelpro: grid = ceil_div(N, B)
// kernelpro: block = B
// kernelpro: y = inout float[N]
// kernelpro: x = in float[N]
// kernelpro: n = N
__global__ void scale(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = old_helper(x[i]) * 2.0;
}

__global__ void other(float* y) { y[0] = shared_helper(0.0f); }

int main() { return 0; }
"#;

/// The spliced file from the `+` lines on (or the error).
fn check(code: &str, expected: Expect) {
    let site = KernelSite::find(SOURCE, "scale").unwrap();
    let shown = match site.splice("scale", code) {
        Ok(out) => {
            assert!(out.ends_with(&SOURCE[site.kernel_end..]), "text after the kernel changed");
            out
        }
        Err(e) => format!("error: {e}"),
    };
    expected.assert_eq(&shown);
}

#[test]
fn region_is_helpers_spec_and_kernel() {
    let site = KernelSite::find(SOURCE, "scale").unwrap();
    expect![[r#"
        __device__ float shared_helper(float v) { return v + 1.0f; }

        __device__ float old_helper(float v) { return v; }

        // Scales y.
        // kernelpro: tune B in [128, 256, 512]
        // kernelpro: grid = ceil_div(N, B)
        // kernelpro: block = B
        // kernelpro: y = inout float[N]
        // kernelpro: x = in float[N]
        // kernelpro: n = N
        __global__ void scale(float* y, const float* x, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) y[i] = old_helper(x[i]) * 2.0;
        }"#]]
    .assert_eq(site.region());
    assert!(site.spec_block().starts_with("// kernelpro: tune B"));
}

#[test]
fn new_kernel_helpers_includes_and_tune_order() {
    check(
        r#"#include <cuda_fp16.h>
#include <cstdio>
// kernelpro: tune B in [256, 128, 512]
// kernelpro: grid = 1
struct Pair { float a, b; };
__device__ __forceinline__ float twice(float v) { return v * 2.0f; }
__device__ float old_helper(float v) { return v * 1.0f; }
__global__ void __launch_bounds__(256) scale(float* __restrict__ y, const float* __restrict__ x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = twice(old_helper(x[i]));
}
void launch(float* y) { scale<<<1, 1>>>(y, y, 0); }
"#,
        expect![[r#"
            #include <cstdio>
            // kernelpro: let N = 1 << 20

            __device__ float shared_helper(float v) { return v + 1.0f; }

            __device__ float old_helper(float v) { return v * 1.0f; }

            #include <cuda_fp16.h>
            struct Pair { float a, b; };

            __device__ __forceinline__ float twice(float v) { return v * 2.0f; }

            // Scales y.
            // kernelpro: tune B in [256, 128, 512]
            // kernelpro: grid = ceil_div(N, B)
            // kernelpro: block = B
            // kernelpro: y = inout float[N]
            // kernelpro: x = in float[N]
            // kernelpro: n = N
            __global__ void __launch_bounds__(256) scale(float* __restrict__ y, const float* __restrict__ x, int n) {
              int i = blockIdx.x * blockDim.x + threadIdx.x;
              if (i < n) y[i] = twice(old_helper(x[i]));
            }

            __global__ void other(float* y) { y[0] = shared_helper(0.0f); }

            int main() { return 0; }
        "#]],
    );
}

#[test]
fn tune_lists_with_other_values_are_ignored() {
    let code = "// kernelpro: tune B in [1024, 128]\n__global__ void scale(float* y, const float* x, int n) { }\n";
    let out = KernelSite::find(SOURCE, "scale").unwrap().splice("scale", code).unwrap();
    assert!(out.contains("// kernelpro: tune B in [128, 256, 512]"));
}

#[test]
fn bad_replies_are_errors() {
    check("__device__ float f(float v) { return v; }", expect!["error: the code block holds no `__global__` kernel"]);
    check(
        "__global__ void scale(float* y, const float* x, int n) {}\n__global__ void scale2(float* y) {}",
        expect!["error: the code block holds 2 kernels (scale, scale2); exactly one is allowed"],
    );
    check(
        "__global__ void scale_fast(float* y, const float* x, int n) {}",
        expect!["error: the kernel was renamed to `scale_fast`; it must stay `scale`"],
    );
    check(
        "__global__ void scale(float* y, const float* x, int n, int m) {}",
        expect![
            "error: the parameter list changed from (float y*, float x*, int n) to (float y*, float x*, int n, int m); only `const` and `__restrict__` may be added"
        ],
    );
    check(
        "__global__ void scale(double* y, const float* x, int n) {}",
        expect![
            "error: the parameter list changed from (float y*, float x*, int n) to (double y*, float x*, int n); only `const` and `__restrict__` may be added"
        ],
    );
    check(
        "__global__ void scale(float* y, const float* x, int n) {\n  if (n) {\n",
        expect!["error: the code block is cut off or unbalanced: unclosed `{` at the end"],
    );
    check(
        "__device__ float shared_helper(float v) { return v; }\n__global__ void scale(float* y, const float* x, int n) {}",
        expect![[r#"
            #include <cstdio>
            // kernelpro: let N = 1 << 20

            __device__ float shared_helper(float v) { return v; }

            __device__ float old_helper(float v) { return v; }

            // Scales y.
            // kernelpro: tune B in [128, 256, 512]
            // kernelpro: grid = ceil_div(N, B)
            // kernelpro: block = B
            // kernelpro: y = inout float[N]
            // kernelpro: x = in float[N]
            // kernelpro: n = N
            __global__ void scale(float* y, const float* x, int n) {}

            __global__ void other(float* y) { y[0] = shared_helper(0.0f); }

            int main() { return 0; }
        "#]],
    );
}

#[test]
fn kernel_without_spec_or_helpers() {
    let source = "int g;\n// plain\n__global__ void k(int* a) { a[0] = 1; }\n";
    let site = KernelSite::find(source, "k").unwrap();
    assert_eq!(site.region(), "// plain\n__global__ void k(int* a) { a[0] = 1; }");
    let out = site
        .splice("k", "__device__ int one() { return 1; }\n__global__ void k(int* __restrict__ a) { a[0] = one(); }")
        .unwrap();
    assert_eq!(
        out,
        "int g;\n__device__ int one() { return 1; }\n\n// plain\n__global__ void k(int* __restrict__ a) { a[0] = one(); }\n"
    );
    assert!(KernelSite::find(source, "missing").is_err());
}
