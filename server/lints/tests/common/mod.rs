//! Fixture loading and rendering shared by the static-tool tests.
#![allow(dead_code)]

use kernelpro_lints::launch::{Launch, LaunchFrom};
use kernelpro_lints::{LintInput, Needs, Thresholds, run_all, run_needing};
use kernelpro_model::Finding;
use kernelpro_sass::{disasm::parse_sass, ptxas::parse_ptxas};

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");

pub fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The files of one compiled `.cu` fixture.
pub struct Fixture {
    pub path: &'static str,
    pub cu: String,
    pub sass: String,
    pub ptxas: String,
}

impl Fixture {
    pub fn recorded(cu: &'static str, sass: &str, ptxas: &str) -> Fixture {
        Fixture { path: cu.rsplit('/').next().unwrap(), cu: read(cu), sass: read(sass), ptxas: read(ptxas) }
    }
    pub fn planted() -> Fixture {
        Fixture::recorded("lints/planted.cu", "lints/planted.sm90.nvdisasm.txt", "lints/planted.sm90.ptxas.txt")
    }
    pub fn clean() -> Fixture {
        Fixture::recorded("lints/clean.cu", "lints/clean.sm90.nvdisasm.txt", "lints/clean.sm90.ptxas.txt")
    }
}

pub fn findings(fixture: &Fixture, with_sass: bool, thresholds: &Thresholds) -> Vec<Finding> {
    findings_of(fixture, with_sass, thresholds, |_| true)
}

/// The findings of the tools whose needs pass `which` (`run_needing`).
pub fn findings_of(
    fixture: &Fixture,
    with_sass: bool,
    thresholds: &Thresholds,
    which: impl Fn(Needs) -> bool,
) -> Vec<Finding> {
    let source = kernelpro_source::parse(&fixture.cu);
    let sass = parse_sass(&fixture.sass);
    let resources = parse_ptxas(&fixture.ptxas);
    // The fixtures' own launches (h200-probe's `main`), and a spec's for big_shared.
    let in_file = kernelpro_lints::launch::in_file(&fixture.cu, &source, source.kernels());
    let launches = |k: &str| {
        in_file
            .get(k)
            .copied()
            .or_else(|| (k == "big_shared").then_some(Launch { block: 128, smem: Some(0), from: LaunchFrom::Spec }))
    };
    let input = LintInput {
        path: fixture.path,
        text: &fixture.cu,
        source: &source,
        sass: with_sass.then_some(&sass),
        resources: &resources,
        arch: "sm_90",
        launches: &launches,
        default_block: 256,
        block_dims: &|_: &str| None,
        spec_values: &|_: &str| Vec::new(),
    };
    if *thresholds == Thresholds::default() && which(Needs::Sass) {
        run_all(&input)
    } else {
        run_needing(&input, thresholds, which)
    }
}

/// `Tool line:col-line:col message`, 1-based lines and columns as an editor shows them.
pub fn render(findings: &[Finding]) -> String {
    let col = |c: u32| {
        if c == u32::MAX { "$".to_string() } else { (c + 1).to_string() }
    };
    findings
        .iter()
        .map(|f| {
            let (s, e) = (f.span.start, f.span.end);
            format!(
                "{} {}:{}-{}:{} {}",
                f.code.as_deref().unwrap_or("?"),
                s.line + 1,
                col(s.col),
                e.line + 1,
                col(e.col),
                f.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
