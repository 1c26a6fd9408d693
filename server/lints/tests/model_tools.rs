//! The kernel-model tools on fixtures as data (`tests/fixtures/lints/model/`),
//! without SASS: in `naive.cu` each problem line ends with `// expect: CODE`
//! (or `CODE, CODE`) and exactly those lines get those codes; `clean.cu` gets
//! no warning at all. The messages are snapshotted beside the fixture.

mod common;

use common::{FIXTURES, render};
use expect_test::{ExpectFile, expect_file};
use kernelpro_lints::{LintInput, run_all};
use kernelpro_model::{Finding, Severity};
use std::collections::BTreeSet;

/// The codes of the tools built on the kernel model.
const MODEL_CODES: &[&str] = &[
    "UncoalescedAccess",
    "RowWalk",
    "AtomicContention",
    "DivergentBranch",
    "SharedBankConflict",
    "MissedReuse",
    "ScalarLoads",
    "SyncInDivergentBranch",
];

fn model_findings(name: &str) -> (String, Vec<Finding>) {
    let text = std::fs::read_to_string(format!("{FIXTURES}/lints/model/{name}")).unwrap();
    // `// block: KERNEL X Y Z`
    let blocks: Vec<(String, [u32; 3])> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("// block:"))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((w.first()?.to_string(), [w.get(1)?.parse().ok()?, w.get(2)?.parse().ok()?, w.get(3)?.parse().ok()?]))
        })
        .collect();
    let source = kernelpro_source::parse(&text);
    let dims = |k: &str| blocks.iter().find(|(n, _)| n == k).map(|(_, b)| *b);
    let launches = |k: &str| {
        dims(k).map(|b| kernelpro_lints::launch::Launch {
            block: b.iter().product(),
            smem: None,
            from: kernelpro_lints::launch::LaunchFrom::Spec,
        })
    };
    let input = LintInput {
        path: name,
        text: &text,
        source: &source,
        sass: None,
        resources: &[],
        arch: "sm_90",
        launches: &launches,
        default_block: 256,
        block_dims: &dims,
        spec_values: &|_: &str| Vec::new(),
    };
    let found =
        run_all(&input).into_iter().filter(|f| MODEL_CODES.contains(&f.code.as_deref().unwrap_or(""))).collect();
    (text, found)
}

fn markers(text: &str) -> BTreeSet<(u32, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| Some((i as u32 + 1, l.split_once("// expect: ")?.1)))
        .flat_map(|(line, codes)| codes.split(',').map(move |c| (line, c.trim().to_string())))
        .collect()
}

fn check(name: &str, snapshot: ExpectFile) {
    let (text, found) = model_findings(name);
    let got: BTreeSet<(u32, String)> =
        found.iter().map(|f| (f.span.start.line + 1, f.code.clone().unwrap_or_default())).collect();
    snapshot.assert_eq(&render(&found));
    assert_eq!(got, markers(&text), "findings (left) against the fixture's expect markers (right)");
    assert!(
        found.iter().all(|f| f.guidance.is_some() && !f.evidence.is_empty()),
        "every finding carries evidence and the expert fix"
    );
}

#[test]
fn naive_kernels_get_their_problem_on_its_line() {
    check("naive.cu", expect_file!["../../../tests/fixtures/lints/model/naive.findings.txt"]);
}

#[test]
fn clean_kernels_get_no_warning() {
    let (_, found) = model_findings("clean.cu");
    let warnings: Vec<Finding> = found.into_iter().filter(|f| f.severity == Severity::Warning).collect();
    assert_eq!(render(&warnings), "");
}

/// Regression: neighbouring atomic targets are not loads to vectorize (issue 18,
/// seen under `--use_fast_math`), and a shared broadcast is no bank conflict.
#[test]
fn atomic_targets_and_broadcasts_stay_silent() {
    let src = "__global__ void k(float* __restrict__ out, const float* __restrict__ x, int n) {\n  __shared__ float s[64];\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  s[threadIdx.x % 64] = x[i];\n  __syncthreads();\n  float v = s[0] + s[7];\n  atomicAdd(&out[4 * i + 0], v);\n  atomicAdd(&out[4 * i + 1], v);\n  atomicAdd(&out[4 * i + 2], v);\n  atomicAdd(&out[4 * i + 3], v);\n}\n";
    let source = kernelpro_source::parse(src);
    let none = |_: &str| None;
    let no_dims = |_: &str| None;
    let input = LintInput {
        path: "k.cu",
        text: src,
        source: &source,
        sass: None,
        resources: &[],
        arch: "sm_90",
        launches: &none,
        default_block: 256,
        block_dims: &no_dims,
        spec_values: &|_: &str| Vec::new(),
    };
    let found: Vec<Finding> = run_all(&input)
        .into_iter()
        .filter(|f| matches!(f.code.as_deref(), Some("ScalarLoads" | "SharedBankConflict")))
        .collect();
    assert_eq!(render(&found), "");
}

/// Regressions from public code (docs/public-code.md): an atomic one thread of
/// a warp or block performs through cooperative groups (`warp.thread_rank() == 0`)
/// is no contention, and a `__device__` helper's atomic is judged where a kernel
/// calls it (its address is the caller's), not alone.
#[test]
fn public_code_atomics() {
    let (text, found) = model_findings("public_code.cu");
    let atomics: Vec<Finding> = found.into_iter().filter(|f| f.code.as_deref() == Some("AtomicContention")).collect();
    let got: BTreeSet<(u32, String)> =
        atomics.iter().map(|f| (f.span.start.line + 1, f.code.clone().unwrap_or_default())).collect();
    assert_eq!(got, markers(&text), "{}", render(&atomics));
    let kernels: Vec<&str> = atomics.iter().filter_map(|f| f.kernel.as_deref()).collect();
    assert_eq!(kernels, ["total"], "{}", render(&atomics));
}

/// Regression from public code (SGEMM_CUDA's 2D block tiling): a loop bounded
/// by a template value (`n < TN`) is a register tile's width, not a row walk.
#[test]
fn public_code_register_tiles_are_no_row_walks() {
    let (_, found) = model_findings("public_code.cu");
    let walks: Vec<Finding> = found.into_iter().filter(|f| f.code.as_deref() == Some("RowWalk")).collect();
    assert_eq!(render(&walks), "");
}
