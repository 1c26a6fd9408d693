//! The real H200 recordings of tests/fixtures/h200-probe: five kernels, each
//! with one planted problem, profiled with `--set full` and with the stage-1
//! sections.

use expect_test::{Expect, expect};
use kernelpro_model::Finding;
use kernelpro_profile::tools::{Thresholds, ToolInput, analyze, select_tools};
use kernelpro_profile::{KernelProfile, SourcePage, TriageThresholds, parse_details, parse_raw, parse_source, triage};

fn fixture(name: &str) -> String {
    let path = format!("{}/../../tests/fixtures/h200-probe/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn full_profiles() -> Vec<KernelProfile> {
    let mut profiles = parse_raw(&fixture("full_raw.csv")).unwrap();
    parse_details(&fixture("full_details.csv"), &mut profiles).unwrap();
    profiles
}

fn source_page(kernel: &str) -> SourcePage {
    let mut pages = parse_source(&fixture(&format!("src_{kernel}.csv"))).unwrap();
    assert_eq!(pages.len(), 1);
    pages.remove(0)
}

/// The 0-based line of kernels.cu that contains `text`.
fn line_of(text: &str) -> u32 {
    let src = fixture("kernels.cu");
    src.lines().position(|l| l.contains(text)).unwrap_or_else(|| panic!("{text:?} not in kernels.cu")) as u32
}

/// Stage 2 on one kernel of the full recording: the tools of its class.
fn findings(kernel: &str) -> Vec<Finding> {
    let profiles = full_profiles();
    let profile = profiles.iter().find(|p| p.kernel == kernel).unwrap();
    let tri = triage(profile, &TriageThresholds::default()).unwrap();
    let page = source_page(kernel);
    let src = fixture("kernels.cu");
    let lines: Vec<&str> = src.lines().collect();
    let thresholds = Thresholds::default();
    let input = ToolInput {
        profile,
        source: Some(&page),
        triage: Some(&tri),
        source_lines: &lines,
        thresholds: &thresholds,
        launch_overhead_pct: None,
    };
    analyze(&select_tools(tri.class), &input)
}

fn render(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            let evidence: Vec<String> = f.evidence.iter().map(|e| format!("{}={}", e.name, e.value)).collect();
            format!(
                "{} {} {} {}\n  -> {}\n  gain {:?} [{}]\n",
                f.span.start.line,
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

#[test]
fn debug_dump() {
    for k in ["saxpy_fp64", "strided_copy", "matmul_naive", "transpose_conflicts", "divergent"] {
        println!("== {k}\n{}", render(&findings(k)));
    }
    for f in ["full_raw.csv", "stage1_raw.csv", "sol_raw.csv"] {
        for p in parse_raw(&fixture(f)).unwrap() {
            let t = triage(&p, &TriageThresholds::default()).unwrap();
            println!("{f} {}: {} (agree {})", p.kernel, t.summary, t.agreement);
        }
    }
}
