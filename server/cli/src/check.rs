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

/// The most a source file may hold: a kernel file is far smaller, and a
/// larger one is a mistake (a log, a dump, `/dev/zero`) that would only cost memory.
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// Reads a file the user named, refusing by file type before reading what is
/// not a plain file (a FIFO would hang the read, a device never end) and
/// anything over [`MAX_INPUT_BYTES`].
pub fn read_input(path: &Path) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let refuse = |t: std::fs::FileType| -> anyhow::Result<()> {
        let what = if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_dir() {
            "a directory"
        } else if t.is_file() {
            return Ok(());
        } else {
            "not a regular file"
        };
        anyhow::bail!("it is {what}, not a source file")
    };
    // By type first (following links): opening a FIFO would wait for a writer.
    refuse(std::fs::metadata(path)?.file_type())?;
    // Then the file actually opened (never blocking), in case it was swapped meanwhile.
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    refuse(meta.file_type())?;
    let too_big = || anyhow::anyhow!("it is larger than {} MiB, too large for a source file", MAX_INPUT_BYTES >> 20);
    if meta.len() > MAX_INPUT_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_big());
    }
    Ok(bytes)
}

/// [`read_input`] as UTF-8 text.
pub fn read_text(path: &Path) -> anyhow::Result<String> {
    let bytes = read_input(path)?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!("it is not valid UTF-8 (first bad byte at offset {})", e.utf8_error().valid_up_to())
    })
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
        let (text, read_problem) = match read_input(path) {
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
                // In reading order, as a compiler prints: the file's own lines, then each header's.
                let mut ordered: Vec<&Finding> = analysis.findings.iter().collect();
                ordered.sort_by_key(|f| (shown_file(path, f), f.span.start.line, f.span.start.col));
                for f in ordered {
                    println!("{}", compiler_line(path, f));
                }
                if let Some(line) = sass_line {
                    let text =
                        kernelpro_core::hover::sass_listing(&analysis, line.saturating_sub(1), line.saturating_sub(1));
                    println!("{}", text.unwrap_or_else(|| format!("{}:{line}: no SASS for this line", path.display())));
                }
            }
            Format::Json => json_files.push(file_json(path, &analysis, &text)),
        }
    }
    if let Format::Json = format {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "files": json_files })).expect("json"));
    }
    if any_error { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// The file a finding is printed under: a header's findings name the header,
/// relative to the working directory when under it.
fn shown_file(path: &Path, f: &Finding) -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_default();
    match f.file.as_deref() {
        Some(header) => header.strip_prefix(&cwd).unwrap_or(header).to_path_buf(),
        None => path.to_path_buf(),
    }
}

/// `file:line:col: severity: message [code]`, then the guidance on its own line.
pub fn compiler_line(path: &Path, f: &Finding) -> String {
    let file = shown_file(path, f);
    let col = if f.span.start.col == u32::MAX { 1 } else { f.span.start.col + 1 };
    let code = f.code.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default();
    let mut line = format!(
        "{}:{}:{}: {}: {}{}",
        file.display(),
        f.span.start.line + 1,
        col,
        f.severity.as_str(),
        // A multi-line message (gcc's, with its source excerpt) keeps its lines, indented.
        f.message.trim_end().replace('\n', "\n    "),
        code
    );
    if let Some(g) = &f.guidance {
        line.push_str(&format!("\n    → {g}"));
    }
    line
}

/// One file's findings and kernels. Every line and column is 0-based (a
/// column is a UTF-8 byte offset in its line), as in the LSP: a whole-line
/// span ends at the line's length, never at a sentinel.
fn file_json(path: &Path, a: &FileAnalysis, text: &str) -> serde_json::Value {
    // The text of each file a span may point into: this one, its headers, else read.
    let mut texts: std::collections::HashMap<PathBuf, String> = std::collections::HashMap::new();
    let mut text_of = |file: Option<&Path>| -> String {
        let Some(file) = file else { return text.to_owned() };
        texts
            .entry(file.to_path_buf())
            .or_insert_with(|| match a.headers.iter().find(|h| h.path == file) {
                Some(h) => h.text.to_string(),
                None => read_text(file).unwrap_or_default(),
            })
            .clone()
    };
    let mut fix = |span: &mut kernelpro_model::Span, file: Option<&Path>| {
        if span.start.col == u32::MAX {
            span.start.col = 0;
        }
        if span.end.col == u32::MAX {
            let source = text_of(file);
            let line = source.lines().nth(span.end.line as usize).map(|l| l.trim_end_matches('\r').len() as u32);
            span.end.col = line.unwrap_or(span.start.col);
        }
    };
    let findings: Vec<serde_json::Value> = a
        .findings
        .iter()
        .map(|f| {
            let mut f = f.clone();
            fix(&mut f.span, f.file.as_deref());
            for r in &mut f.related {
                fix(&mut r.span, Some(&r.file));
            }
            serde_json::to_value(&f).expect("json")
        })
        .collect();
    serde_json::json!({
        "path": path,
        "findings": findings,
        "kernels": a.source.kernels().map(|k| serde_json::json!({
            "name": k.name,
            "line": k.span.start.line,
            "summary": a.kernel_summary(&k.name),
        })).chain(a.headers.iter().flat_map(|h| {
            kernelpro_source::parse(&h.text).kernels().map(|k| serde_json::json!({
                "name": k.name,
                "file": h.path,
                "line": k.span.start.line,
                "summary": a.kernel_summary(&k.name),
            })).collect::<Vec<_>>()
        })).collect::<Vec<_>>(),
    })
}
