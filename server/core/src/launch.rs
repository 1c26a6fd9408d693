//! Launch specs of a file's kernels, resolved against their signatures.

use kernelpro_model::{Finding, Pos, Severity, Span};
use kernelpro_source::SourceFile;
use kernelpro_spec::{KernelSignature, LaunchSpec, ResolveOptions};
use std::collections::HashMap;

/// Every kernel's resolved spec, and every problem with the specs as findings.
pub fn resolve_all(
    text: &str,
    source: &SourceFile,
    opts: &ResolveOptions,
) -> (HashMap<String, LaunchSpec>, Vec<Finding>) {
    let specs = kernelpro_spec::parse_file(text);
    let mut resolved = HashMap::new();
    let mut findings = Vec::new();
    for raw in &specs.kernels {
        let Some(f) = source.kernel(&raw.kernel) else {
            continue;
        };
        match kernelpro_spec::resolve(raw, &specs.file_lets, &KernelSignature::of(f), opts) {
            Ok(spec) => {
                resolved.insert(raw.kernel.clone(), spec);
            }
            Err(errors) => findings.extend(errors),
        }
    }
    for line in &specs.detached {
        let span = Span::new(Pos::new(line.line, line.col), Pos::new(line.line, line.col + line.text.len() as u32));
        findings.push(
            Finding::new(
                "kernelpro",
                Severity::Warning,
                span,
                format!("this spec line attaches to no kernel: `{}` is for the `__global__` function that follows its block (blank, `#…`, comment, `template <…>` and attribute lines may stand between)", line.text),
            )
            .with_code(kernelpro_spec::code::MISPLACED),
        );
    }
    (resolved, findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_errors_become_findings_and_specs_resolve() {
        let text = "// kernelpro: grid = 4\n// kernelpro: block = 2048\n// kernelpro: y = out half[10]\n// kernelpro: bogus = 3\n__global__ void k(float* y, int n) { y[0] = n; }\n\n// kernelpro: grid = 1\n// kernelpro: block = 128\n// kernelpro: y = out float[128]\n__global__ void ok(float* __restrict__ y) { y[threadIdx.x] = 1.0f; }\n";
        let source = kernelpro_source::parse(text);
        let (specs, findings) = resolve_all(text, &source, &ResolveOptions::default());
        let got: Vec<String> =
            findings.iter().map(|f| format!("{} {}", f.span.start.line, f.code.as_deref().unwrap_or(""))).collect();
        assert!(got.len() >= 3, "{got:?}");
        assert_eq!(specs["ok"].block, [128, 1, 1]);
    }

    #[test]
    fn specs_across_a_define_resolve_and_detached_lines_are_findings() {
        let text = "// kernelpro: grid = 1\n// kernelpro: block = 64\n// kernelpro: y = out float[64]\n#define SCALE 2.0f\n\n__global__ void k(float* y) { y[threadIdx.x] = SCALE; }\n// kernelpro: block = 32\nint host();\n";
        let source = kernelpro_source::parse(text);
        let (specs, findings) = resolve_all(text, &source, &ResolveOptions::default());
        assert_eq!(specs["k"].block, [64, 1, 1]);
        let got: Vec<String> = findings
            .iter()
            .map(|f| {
                format!(
                    "{}:{}-{} {}",
                    f.span.start.line,
                    f.span.start.col,
                    f.span.end.col,
                    f.code.as_deref().unwrap_or("")
                )
            })
            .collect();
        assert_eq!(got, ["6:14-24 misplaced-directive"]);
    }
}
