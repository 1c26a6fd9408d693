//! `kernelpro check`: the save-time analysis, printed like a compiler.

use crate::CompileArgs;
use kernelpro_core::analysis::{Analyzer, FileAnalysis};
use kernelpro_model::{Finding, Severity};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

pub async fn run(files: &[PathBuf], format: Format, sass_line: Option<u32>, args: &CompileArgs) -> ExitCode {
    if files.is_empty() {
        eprintln!("kernelpro check: give at least one .cu file");
        return ExitCode::from(2);
    }
    let settings = args.settings().with_projects_of(files);
    let analyzer = Analyzer::default();
    let mut any_error = false;
    let mut json_files = Vec::new();
    for path in files {
        let (text, read_problem) = match std::fs::read(path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(t) => (t, None),
                Err(e) => {
                    let at = e.utf8_error().valid_up_to();
                    (
                        String::from_utf8_lossy(e.as_bytes()).into_owned(),
                        Some(format!(
                            "the file is not valid UTF-8 (first bad byte at offset {at}); columns after it may be off"
                        )),
                    )
                }
            },
            Err(e) => {
                eprintln!("{}: error: cannot read the file: {e}", path.display());
                any_error = true;
                continue;
            }
        };
        // Absolute: a relative `untitled.cu` is a file here, not the stand-in for an unsaved buffer.
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        let mut analysis = match analyzer.analyze(&absolute, &text, &settings, &CancellationToken::new()).await {
            Ok(a) => a,
            Err(e) => {
                eprintln!("{}: error: {e}", path.display());
                any_error = true;
                continue;
            }
        };
        if let Some(p) = read_problem {
            analysis.findings.insert(
                0,
                Finding::new("kernelpro", Severity::Warning, kernelpro_model::Span::line(0), p).with_code("not-utf8"),
            );
        }
        any_error |= analysis.has_errors() || analysis.findings.iter().any(|f| f.severity == Severity::Error);
        match format {
            Format::Text => {
                for f in &analysis.findings {
                    println!("{}", compiler_line(path, f));
                }
                if let Some(line) = sass_line {
                    let text =
                        kernelpro_core::hover::sass_listing(&analysis, line.saturating_sub(1), line.saturating_sub(1));
                    println!("{}", text.unwrap_or_else(|| format!("{}:{line}: no SASS for this line", path.display())));
                }
            }
            Format::Json => json_files.push(file_json(path, &analysis)),
        }
    }
    if let Format::Json = format {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "files": json_files })).expect("json"));
    }
    if any_error { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// `file:line:col: severity: message [code]`, then the guidance on its own line.
pub fn compiler_line(path: &Path, f: &Finding) -> String {
    // A header's findings name the header, relative to the working directory when under it.
    let cwd = std::env::current_dir().unwrap_or_default();
    let file = match f.file.as_deref() {
        Some(header) => header.strip_prefix(&cwd).unwrap_or(header),
        None => path,
    };
    let col = if f.span.start.col == u32::MAX { 1 } else { f.span.start.col + 1 };
    let code = f.code.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default();
    let mut line = format!(
        "{}:{}:{}: {}: {}{}",
        file.display(),
        f.span.start.line + 1,
        col,
        f.severity.as_str(),
        f.message.replace('\n', " "),
        code
    );
    if let Some(g) = &f.guidance {
        line.push_str(&format!("\n    → {g}"));
    }
    line
}

fn file_json(path: &Path, a: &FileAnalysis) -> serde_json::Value {
    serde_json::json!({
        "path": path,
        "findings": a.findings,
        "kernels": a.source.kernels().map(|k| serde_json::json!({
            "name": k.name,
            "line": k.span.start.line + 1,
            "summary": a.kernel_summary(&k.name),
        })).chain(a.headers.iter().flat_map(|h| {
            kernelpro_core::source::parse(&h.text).kernels().map(|k| serde_json::json!({
                "name": k.name,
                "file": h.path,
                "line": k.span.start.line + 1,
                "summary": a.kernel_summary(&k.name),
            })).collect::<Vec<_>>()
        })).collect::<Vec<_>>(),
    })
}
