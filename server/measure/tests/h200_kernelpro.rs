//! Harness-mode profiles of the benchmark kernels, recorded on an H200 with
//! `kernelpro profile bench/kernels/K.cu --save-exports DIR` (see
//! tests/fixtures/h200-kernelpro/README.md): each planted problem is found on
//! its line, from the pages exactly as ncu exported them.

use expect_test::{Expect, expect};
use kernelpro_measure::profiling::{Exports, analyze_exports};
use kernelpro_profile::Thresholds;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The triage summary, then `line code` (1-based) of every finding.
fn check(kernel_file: &str, expected: Expect) {
    let text = std::fs::read_to_string(root().join("bench/kernels").join(format!("{kernel_file}.cu"))).unwrap();
    let exports = Exports::from_dir(&root().join("tests/fixtures/h200-kernelpro").join(kernel_file)).unwrap();
    let report = analyze_exports(&exports, &text, &Thresholds::default()).unwrap();
    let mut out = String::new();
    for k in &report.kernels {
        out.push_str(&format!("{}: {}\n", k.kernel, k.triage.as_ref().map_or("no triage", |t| t.summary.as_str())));
        for f in &k.findings {
            out.push_str(&format!("  {} {}\n", f.span.start.line + 1, f.code.as_deref().unwrap_or("")));
        }
    }
    expected.assert_eq(&out);
}

#[test]
fn strided_copy() {
    check(
        "strided_copy",
        expect![[r#"
        strided_copy: memory-bound · L2 85% of peak · 0 FLOP/B · 260.4 µs
          11 Uncoalesced
          11 WarpStall
    "#]],
    );
}

#[test]
fn transpose() {
    check(
        "transpose",
        expect![[r#"
        transpose: memory-bound · L1/shared 64% of peak · 0 FLOP/B · 123.5 µs
          15 SharedBankConflicts
          15 Vectorization
    "#]],
    );
}

#[test]
fn histogram() {
    check(
        "histogram",
        expect![[r#"
        histogram: latency-bound · L2 2% of peak · 0 FLOP/B · 4.33 ms
          11 ContendedAtomics
          9 LaunchOverhead
    "#]],
    );
}

#[test]
fn reduction() {
    check(
        "reduction",
        expect![[r#"
        reduce_sum: latency-bound · L1/shared 53% of peak · 0.24 FLOP/B · 118.2 µs
          13 WarpStall
          9 LaunchOverhead
    "#]],
    );
}

#[test]
fn softmax() {
    check(
        "softmax",
        expect![[r#"
        softmax_rows: memory-bound · L1/shared 66% of peak · 0.50 FLOP/B · 428.4 µs
          16 Uncoalesced
          18 Uncoalesced
          19 Uncoalesced
          19 SharedMemTiling
          19 WarpStall
          12 TailEffect
    "#]],
    );
}

#[test]
fn elementwise_fp64() {
    check(
        "elementwise_fp64",
        expect![[r#"
        elementwise: latency-bound · L2 60% of peak · 1.3 FLOP/B · 52.4 µs
          12 WarpStall
          12 FP64Math
          10 LaunchOverhead
    "#]],
    );
}

#[test]
fn stencil2d() {
    check(
        "stencil2d",
        expect![[r#"
        stencil: latency-bound · L2 64% of peak · 0.38 FLOP/B · 61.1 µs
          13 WarpStall
          13 FP64Math
          8 LaunchOverhead
    "#]],
    );
}
