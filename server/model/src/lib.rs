//! Plain data shared by every KernelPro crate.
//!
//! Architecture invariant: nothing here knows about LSP, processes or files on
//! disk. Positions are 0-based lines and UTF-8 byte columns, as tree-sitter and
//! compilers count them; the LSP adapter converts to UTF-16 at its one seam.
#![forbid(unsafe_code)]

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Lines `start_line..end_line` (0-based, end exclusive) replaced by `text`
/// (whole lines, each ending in `\n`): an optimize result's edit, made by
/// `optimize`, re-based by `session`, sent by `lsp` and written by the CLI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineEdit {
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
}

mod codes;
pub use codes::{CODES, Code, CodeInfo, Origin};

/// A 0-based line and a UTF-8 byte column within that line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

impl Pos {
    pub const fn new(line: u32, col: u32) -> Self {
        Pos { line, col }
    }
}

/// A half-open range of text. `end.col == u32::MAX` means "to the end of the line".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct Span {
    pub start: Pos,
    pub end: Pos,
}

impl Span {
    pub const fn new(start: Pos, end: Pos) -> Self {
        Span { start, end }
    }
    /// The whole of one 0-based line.
    pub const fn line(line: u32) -> Self {
        Span { start: Pos::new(line, 0), end: Pos::new(line, u32::MAX) }
    }
    pub fn contains_line(&self, line: u32) -> bool {
        self.start.line <= line && line <= self.end.line
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }
}

/// One named number or fact a finding rests on, e.g. `("sectors/request", "16.0")`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub name: String,
    pub value: String,
}

impl Evidence {
    pub fn new(name: impl Into<String>, value: impl ToString) -> Self {
        Evidence { name: name.into(), value: value.to_string() }
    }
}

/// Another place that explains a finding (an included header, a launch site).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Related {
    pub file: PathBuf,
    pub span: Span,
    pub message: String,
}

/// Everything KernelPro reports on a source range: compiler messages, static
/// SASS/source tools, profiler tools and spec errors all share this shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The file the finding is about; `None` means the file being analysed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub file: Option<PathBuf>,
    pub span: Span,
    pub severity: Severity,
    /// Who produced it: `nvcc`, `kernelpro`, `ncu`, `spec`.
    pub source: String,
    /// A compiler code (`#20011-D`) or a tool name (`RegisterSpill`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub code: Option<String>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kernel: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub evidence: Vec<Evidence>,
    /// The concrete change to make, in plain words.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub guidance: Option<String>,
    /// Estimated speedup of the kernel if the finding is fixed (1.3 = 30% faster).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub estimated_gain: Option<f64>,
    /// A link to the documentation of the tool or message.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub doc_url: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub related: Vec<Related>,
}

impl Finding {
    pub fn new(source: &str, severity: Severity, span: Span, message: impl Into<String>) -> Self {
        Finding {
            file: None,
            span,
            severity,
            source: source.to_string(),
            code: None,
            message: message.into(),
            kernel: None,
            evidence: Vec::new(),
            guidance: None,
            estimated_gain: None,
            doc_url: None,
            related: Vec::new(),
        }
    }
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }
    pub fn with_kernel(mut self, kernel: impl Into<String>) -> Self {
        self.kernel = Some(kernel.into());
        self
    }
    pub fn with_guidance(mut self, guidance: impl Into<String>) -> Self {
        self.guidance = Some(guidance.into());
        self
    }
    pub fn with_evidence(mut self, name: impl Into<String>, value: impl ToString) -> Self {
        self.evidence.push(Evidence::new(name, value));
        self
    }
    pub fn with_doc(mut self, url: impl Into<String>) -> Self {
        self.doc_url = Some(url.into());
        self
    }
    pub fn with_gain(mut self, gain: f64) -> Self {
        self.estimated_gain = Some(gain);
        self
    }
}

/// Where a tool's documentation is, relative to the KernelPro tree (this
/// repository, or the VS Code extension, which ships `docs/`): the LSP links
/// it where the docs are installed beside the server (`core::docs`).
pub fn tool_doc_url(tool: &str) -> String {
    format!("docs/tools.md#{}", tool.to_ascii_lowercase())
}
