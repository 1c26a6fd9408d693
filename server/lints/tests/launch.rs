//! Where a kernel's launch comes from (launch sites, `__launch_bounds__`) and
//! OccupancyLimit under that launch, per template instantiation and architecture.

mod common;

use common::render;
use expect_test::{Expect, expect};
use kernelpro_lints::launch::in_file;
use kernelpro_lints::{LintInput, OccupancyLimit, StaticTool};
use kernelpro_sass::ptxas::parse_ptxas;

fn check_launches(src: &str, expected: Expect) {
    let source = kernelpro_source::parse(src);
    let found = in_file(src, &source, source.kernels());
    let mut got: Vec<String> = found
        .iter()
        .map(|(k, l)| format!("{k}: {} threads, smem {:?}, from {}", l.block, l.smem, l.from.describe()))
        .collect();
    got.sort();
    expected.assert_eq(&got.join("\n"));
}

#[test]
fn launch_sites_and_bounds() {
    check_launches(
        r#"#define THREADS 128
template <typename T> __global__ void tpl(T* y) {}
__global__ void __launch_bounds__(2 * THREADS, 2) bounded(float* y) {}
__global__ void with_dim3(float* y) {}
__global__ void with_smem(float* y) {}
__global__ void unknown(float* y) {}
__global__ void var_block(float* y) {}
void host(float* y, int n, int t) {
  dim3 block(16, 8);
  int threads = 64;
  tpl<float><<<n / THREADS, THREADS>>>(y);
  with_dim3<<<dim3(n / 16, n / 8), block>>>(y);
  with_smem<<<n, 32, 32 * sizeof(float) + 16, 0>>>(y);
  unknown<<<n, t>>>(y);
  var_block<<<n, threads>>>(y);
}
"#,
        expect![[r#"
            bounded: 256 threads, smem None, from its `__launch_bounds__` maximum
            tpl: 128 threads, smem Some(0), from the launch on line 11
            var_block: 64 threads, smem Some(0), from the launch on line 15
            with_dim3: 128 threads, smem Some(0), from the launch on line 12
            with_smem: 32 threads, smem Some(144), from the launch on line 13"#]],
    );
}

/// OccupancyLimit on `src` with the ptxas report `ptxas` for `arch`.
fn check_occupancy(src: &str, ptxas: &str, arch: &str, expected: Expect) {
    let source = kernelpro_source::parse(src);
    let resources = parse_ptxas(ptxas);
    let found = in_file(src, &source, source.kernels());
    let launches = |k: &str| found.get(k).copied();
    let input = LintInput {
        path: "k.cu",
        text: src,
        source: &source,
        sass: None,
        resources: &resources,
        arch,
        launches: &launches,
        default_block: 256,
        block_dims: &|_: &str| None,
        spec_values: &|_: &str| Vec::new(),
    };
    let tool = OccupancyLimit { min_percent: 50.0 };
    let findings = tool.analyze(&input);
    let evidence: Vec<String> = findings
        .iter()
        .map(|f| f.evidence.iter().map(|e| format!("{}={}", e.name, e.value)).collect::<Vec<_>>().join("; "))
        .collect();
    expected.assert_eq(&format!("{}\n{}", render(&findings), evidence.join("\n")));
}

const TEMPLATE: &str = r#"template <typename T>
__global__ void stage(T* y) { extern __shared__ T s[]; y[0] = s[0]; }
void host(float* y, double* d) {
  stage<float><<<1, 512, 40000>>>(y);
}
"#;

/// nvcc 13.2 -arch=sm_120 -Xptxas -v on TEMPLATE with `stage<double>` also launched (registers raised to show a limit).
const TEMPLATE_PTXAS: &str = "\
ptxas info    : Compiling entry function '_Z5stageIdEvPT_' for 'sm_120'
ptxas info    : Function properties for _Z5stageIdEvPT_
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 96 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compiling entry function '_Z5stageIfEvPT_' for 'sm_120'
ptxas info    : Function properties for _Z5stageIfEvPT_
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
";

#[test]
fn occupancy_per_instantiation_with_the_real_launch_and_dynamic_shared_memory() {
    check_occupancy(
        TEMPLATE,
        TEMPLATE_PTXAS,
        "sm_120",
        expect![[r#"
            OccupancyLimit 2:17-2:22 `stage<double>` reaches 33.3% occupancy on sm_120 with 512-thread blocks, limited by 96 registers per thread
            block size=512 (from the launch on line 4); registers=96; shared memory (B)=40000; dynamic shared memory (B)=40000; blocks per SM=1; active warps=16/48"#]],
    );
}

#[test]
fn unknown_architectures_stay_silent() {
    let source = kernelpro_source::parse(TEMPLATE);
    let resources = parse_ptxas(TEMPLATE_PTXAS);
    let no_launch = |_: &str| None;
    let input = LintInput {
        path: "k.cu",
        text: TEMPLATE,
        source: &source,
        sass: None,
        resources: &resources,
        arch: "sm_70",
        launches: &no_launch,
        default_block: 1024,
        block_dims: &|_: &str| None,
        spec_values: &|_: &str| Vec::new(),
    };
    assert!(OccupancyLimit { min_percent: 50.0 }.analyze(&input).is_empty());
}
