//! Issue 18 item 4: atomic contention, divergence and shared bank conflicts
//! named from ncu's pages, with advice for the cause.
//!
//! Three sources of pages:
//! - tests/fixtures/h200-kernelpro/{histogram,reduction}: real H200 pages
//!   recorded by the harness (stage 1, stage 2, source page);
//! - tests/fixtures/h200-contention/synthetic: hand-written pages in ncu's
//!   exact CSV layout (columns copied from the real recordings), marked
//!   synthetic in their README, standing in until the recordings exist;
//! - tests/fixtures/h200-contention/*.csv: the H200 recordings of
//!   record.sh. Until they are committed the replay tests say so and pass.

use expect_test::{Expect, expect};
use kernelpro_model::Finding;
use kernelpro_profile::tools::{Thresholds, ToolInput, analyze, select_tools};
use kernelpro_profile::{KernelProfile, SourcePage, TriageThresholds, parse_details, parse_raw, parse_source, triage};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Stage-2 metrics completed with stage 1's (what the core crate does).
fn merge(stage1: &KernelProfile, stage2: Option<&KernelProfile>) -> KernelProfile {
    let Some(s2) = stage2 else { return stage1.clone() };
    let mut merged = s2.clone();
    for (k, v) in &stage1.metrics {
        merged.metrics.entry(k.clone()).or_insert_with(|| v.clone());
    }
    merged
}

/// The tools of the kernel's class over one profile, source page and file.
fn run_tools(profile: &KernelProfile, page: Option<&SourcePage>, file_text: &str) -> Vec<Finding> {
    let tri = triage(profile, &TriageThresholds::default());
    let lines: Vec<&str> = file_text.lines().collect();
    let thresholds = Thresholds::default();
    let input = ToolInput { profile, source: page, triage: tri.as_ref(), source_lines: &lines, thresholds: &thresholds, launch_overhead_pct: None };
    let tools = match &tri {
        Some(t) => select_tools(t.class),
        None => kernelpro_profile::tools::TOOLS.iter().collect(),
    };
    analyze(&tools, &input)
}

fn source_page(path: &Path) -> SourcePage {
    let mut pages = parse_source(&read(path)).unwrap();
    assert_eq!(pages.len(), 1, "{}: one function per source page", path.display());
    pages.remove(0)
}

/// A harness recording of tests/fixtures/h200-kernelpro: stage 1 + stage 2 + source page.
fn harness_findings(dir: &str, kernel: &str, file: &str) -> Vec<Finding> {
    let d = fixtures().join("h200-kernelpro").join(dir);
    let s1 = parse_raw(&read(&d.join("stage1_raw.csv"))).unwrap();
    let s2 = parse_raw(&read(&d.join("stage2_raw.csv"))).unwrap();
    let profile = merge(&s1[0], s2.iter().find(|p| p.kernel == s1[0].kernel));
    let page = source_page(&d.join(format!("src_{kernel}.csv")));
    run_tools(&profile, Some(&page), &read(&fixtures().join("../../bench/kernels").join(file)))
}

fn render(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            let evidence: Vec<String> = f.evidence.iter().map(|e| format!("{}={}", e.name, e.value)).collect();
            format!(
                "{} {} {} {}\n  -> {}\n  gain {:?} [{}]\n",
                f.span.start.line + 1,
                f.severity.as_str(),
                f.code.as_deref().unwrap_or(""),
                f.message,
                f.guidance.as_deref().unwrap_or(""),
                f.estimated_gain,
                evidence.join(", ")
            )
        })
        .collect()
}

fn check(findings: &[Finding], expected: Expect) {
    expected.assert_eq(&render(findings));
}

/// The 1-based line of `file` that contains `text`.
fn line_of(file: &str, text: &str) -> u32 {
    file.lines().position(|l| l.contains(text)).unwrap_or_else(|| panic!("{text:?} not in the file")) as u32 + 1
}

// -- real H200 pages of the harness --------------------------------------------

#[test]
fn source_page_keeps_the_inlined_atomic_and_maps_it_to_its_call() {
    let d = fixtures().join("h200-kernelpro/histogram");
    // ncu lists the histogram twice: its own file, then the REDG under
    // CUDA's device_atomic_functions.hpp. One page, two files.
    let page = source_page(&d.join("src_histogram.csv"));
    assert_eq!(page.file, "/tmp/kernelpro-Olubcf/histogram.cu");
    let red = page.instructions.iter().find(|r| r.opcode().starts_with("REDG")).unwrap();
    assert_eq!(red.line, Some(112));
    assert!(red.file.as_deref().unwrap().ends_with("device_atomic_functions.hpp"));
    assert_eq!(page.own_line_of(red), Some(11));
    let own: Vec<u32> = page.own_lines().map(|l| l.line).collect();
    assert_eq!(own, [9, 10, 11, 12]);
    assert!(page.line(112).is_none(), "a header's line number is no line of the kernel's file");
}

/// The issue's histogram: a WarpStall note ("stores to drain") before; an
/// AtomicContention finding on the atomicAdd line now.
#[test]
fn histogram_atomics_are_contention_on_the_atomic_line() {
    let found = harness_findings("histogram", "histogram", "histogram.cu");
    check(&found, expect![[r#"
        11 warning AtomicContention atomic contention: threads update a small table with global atomics: 16.8M atomic updates collide in L2; 41% of warp samples wait for them in `if (i < n) atomicAdd(&bins[data[i]], 1u);`
          -> privatize the table: build a per-block copy in __shared__ memory with shared atomics, __syncthreads(), then add each nonzero entry to global memory once per block; when a warp's lanes often share a key, __match_any_sync lets one lane add for all of them
          gain Some(1.59) [atomic_wait_share=41.4%, drain_at_exit=41.4%, warp_atomics=524288, sectors_per_warp_atomic=20.4 for 32 lanes, busiest_l2_slice_over_average=47.0x]
        9 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
          -> 
          gain None []
    "#]]);
}

/// One atomic per block after a shared-memory tree: no contention.
#[test]
fn block_reduction_atomics_are_not_contention() {
    let found = harness_findings("reduction", "reduce_sum", "reduction.cu");
    assert!(!found.iter().any(|f| f.code.as_deref() == Some("AtomicContention")), "{}", render(&found));
    check(&found, expect![[r#"
        13 info WarpStall 40% of warp samples stall waiting for global/local memory (L1TEX) data (long_scoreboard) in `sdata[tid] = i < n ? x[i] : 0.0f;`
          -> issue the loads earlier and make fewer of them: coalesce them, reuse data through shared memory, or unroll so each thread has several independent loads in flight
          gain None [stall_reason=long_scoreboard, stall_share=40.2%, line_share_of_samples=40.2%]
        9 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
          -> 
          gain None []
    "#]]);
}
