//! Profile-on-save of a program: a kernel whose own text and whose program
//! around it (`source::prints`: the host code, the helpers, the macros) did not
//! change since the last profile keeps that profile's verdict and findings,
//! moved onto the new text's lines; only the kernels that changed are measured
//! again. A save that edits one kernel of five pays for one.

use crate::profiling::{KernelReport, ProfileReport};
use kernelpro_model::{Finding, Span};
use kernelpro_source::prints::{ProgramPrints, program_prints};
use std::path::Path;

/// A program's last profile, kept by the session for the next save's.
#[derive(Debug, Clone)]
pub struct LastProfile {
    /// The text it measured.
    pub text: String,
    pub report: ProfileReport,
    /// What else it depended on ([`key`]); a different key keeps nothing.
    pub key: String,
}

/// What a save's profile of a program keeps and what it measures.
#[derive(Debug, Clone)]
pub struct Reuse {
    /// The unchanged kernels' reports, their findings on the new text's lines.
    pub kept: Vec<KernelReport>,
    /// The kernels to measure: every other kernel of the new text.
    pub fresh: Vec<String>,
}

/// What a program's profile depends on besides its text: the build's arch
/// and flags, the profiler, and the bytes of the headers it includes from its
/// own folder (a header edited since changes every kernel).
pub fn key(path: &Path, text: &str, build: &str, backend: &str) -> String {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut headers = String::new();
    for line in text.lines() {
        let Some(name) = line.trim_start().strip_prefix('#').map(str::trim_start) else { continue };
        let Some(name) = name.strip_prefix("include").map(str::trim) else { continue };
        let Some(name) = name.strip_prefix('"').and_then(|n| n.split('"').next()) else { continue };
        let bytes = std::fs::read(dir.join(name)).unwrap_or_default();
        let hash = kernelpro_source::prints::fingerprint(&bytes);
        headers.push_str(&format!(" {name}={hash:016x}"));
    }
    format!("{backend} {build}{headers}")
}

/// What to keep of `last` for `text` (built and profiled as `key` says), or
/// `None` where nothing can be kept.
pub fn plan(last: &LastProfile, text: &str, key: &str) -> Option<Reuse> {
    if last.key != key {
        return None;
    }
    let (old, new): (ProgramPrints, ProgramPrints) = (program_prints(&last.text)?, program_prints(text)?);
    // A kernel defined elsewhere (a header's) has no print here: measured every time, so all are.
    if last.report.kernels.iter().any(|k| !old.kernels.contains_key(&k.kernel)) {
        return None;
    }
    let unchanged = new.unchanged_since(&old);
    let lines = LineMap::new(&last.text, text);
    let kept: Vec<KernelReport> = last
        .report
        .kernels
        .iter()
        .filter(|k| unchanged.contains(&k.kernel))
        .map(|k| KernelReport { findings: lines.move_findings(&k.findings), ..k.clone() })
        .collect();
    if kept.is_empty() {
        return None;
    }
    let fresh = new.kernels.keys().filter(|k| !kept.iter().any(|r| &&r.kernel == k)).cloned().collect();
    Some(Reuse { kept, fresh })
}

/// Where each line of an older text is in a newer one: lines compared
/// without their comments and layout, so a kernel whose profile is kept
/// keeps all its findings.
struct LineMap {
    /// Old line → new line, for the lines the diff keeps.
    to_new: std::collections::HashMap<u32, u32>,
}

impl LineMap {
    fn new(old: &str, new: &str) -> LineMap {
        let (a, b): (Vec<String>, Vec<String>) =
            (old.lines().map(code_of).collect(), new.lines().map(code_of).collect());
        let mut to_new = std::collections::HashMap::new();
        for op in similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b) {
            if let similar::DiffOp::Equal { old_index, new_index, len } = op {
                for i in 0..len {
                    to_new.insert((old_index + i) as u32, (new_index + i) as u32);
                }
            }
        }
        LineMap { to_new }
    }

    fn span(&self, s: Span) -> Option<Span> {
        let (start, end) = (self.to_new.get(&s.start.line)?, self.to_new.get(&s.end.line)?);
        let mut moved = s;
        moved.start.line = *start;
        moved.end.line = *end;
        Some(moved)
    }

    /// The findings whose lines are still there, moved; a finding on a line
    /// that changed is dropped (it cannot be one of an unchanged kernel's own).
    fn move_findings(&self, findings: &[Finding]) -> Vec<Finding> {
        findings
            .iter()
            .filter_map(|f| {
                let span = if f.file.is_some() { f.span } else { self.span(f.span)? };
                let related = f
                    .related
                    .iter()
                    .filter_map(|r| Some(kernelpro_model::Related { span: self.span(r.span)?, ..r.clone() }))
                    .collect();
                Some(Finding { span, related, ..f.clone() })
            })
            .collect()
    }
}

/// A line's code: without a trailing `//` comment, its spaces collapsed.
fn code_of(line: &str) -> String {
    let code = line.split("//").next().unwrap_or("");
    code.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelpro_model::{Pos, Severity};

    const PROGRAM: &str = "__global__ void a(float* y) {\n  y[threadIdx.x] *= 2.f;\n}\n__global__ void b(float* y) {\n  y[threadIdx.x] += 1.0;\n}\nint main() { float* y; a<<<1, 32>>>(y); b<<<1, 32>>>(y); }\n";

    fn report() -> ProfileReport {
        let finding = |line, kernel: &str, code: &str| {
            Finding::new("ncu", Severity::Warning, Span::new(Pos::new(line, 2), Pos::new(line, 20)), "x")
                .with_code(code)
                .with_kernel(kernel)
        };
        let kernel = |name: &str, findings| KernelReport { kernel: name.into(), triage: None, tools: vec![], findings };
        ProfileReport {
            kernels: vec![
                kernel("a", vec![finding(1, "a", "Vectorization")]),
                kernel("b", vec![finding(4, "b", "FP64Math")]),
            ],
            ..Default::default()
        }
    }

    /// After replacing `from` by `to`: each kept finding as `kernel@line`, then the kernels to measure.
    fn check(from: &str, to: &str, key: &str, expected: &str) {
        let last = LastProfile { text: PROGRAM.into(), report: report(), key: "k".into() };
        let text = PROGRAM.replacen(from, to, 1);
        assert_ne!(text, PROGRAM);
        let got = match plan(&last, &text, key) {
            None => "nothing kept".to_string(),
            Some(r) => {
                let kept: Vec<String> = r
                    .kept
                    .iter()
                    .flat_map(|k| k.findings.iter().map(|f| format!("{}@{}", k.kernel, f.span.start.line)))
                    .collect();
                format!("kept {}; measure {}", kept.join(" "), r.fresh.join(" "))
            }
        };
        assert_eq!(got, expected);
    }

    #[test]
    fn an_edited_kernel_is_measured_and_the_others_keep_their_findings_on_their_moved_lines() {
        // Two lines added inside `a`: `b` keeps its finding, two lines down.
        check("*= 2.f;\n", "*= 2.f;\n  y[threadIdx.x] += 3.f;\n  y[threadIdx.x] += 4.f;\n", "k", "kept b@6; measure a");
        check("+= 1.0;", "+= 1.0f;", "k", "kept a@1; measure b");
    }

    #[test]
    fn a_comment_keeps_every_kernel() {
        check("*= 2.f;", "*= 2.f;  // twice", "k", "kept a@1 b@4; measure ");
    }

    #[test]
    fn host_code_or_another_build_keeps_nothing() {
        check("a<<<1, 32>>>", "a<<<2, 32>>>", "k", "nothing kept");
        check("*= 2.f;", "*= 2.f;  // twice", "other arch", "nothing kept");
    }

    #[test]
    fn a_kernel_defined_elsewhere_keeps_nothing() {
        let mut report = report();
        report.kernels.push(KernelReport {
            kernel: "from_a_header".into(),
            triage: None,
            tools: vec![],
            findings: vec![],
        });
        let last = LastProfile { text: PROGRAM.into(), report, key: "k".into() };
        assert!(plan(&last, &PROGRAM.replacen("+= 1.0;", "+= 1.0f;", 1), "k").is_none());
    }

    #[test]
    fn the_key_holds_the_local_headers_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.cu");
        let text = "#include \"sizes.h\"\n#include <cstdio>\n";
        std::fs::write(dir.path().join("sizes.h"), "#define N 1\n").unwrap();
        let before = key(&file, text, "sm_90", "cupti");
        std::fs::write(dir.path().join("sizes.h"), "#define N 2\n").unwrap();
        let after = key(&file, text, "sm_90", "cupti");
        assert_ne!(before, after);
        assert!(before.starts_with("cupti sm_90 sizes.h="), "{before}");
    }
}
