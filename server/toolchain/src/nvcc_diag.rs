//! Parsing nvcc's, ptxas's and the host compiler's messages.
//!
//! nvcc echoes the offending source line with a caret under the column; the
//! echo can differ from the real line (`__shared__` is printed expanded), so
//! the column is recovered by finding the token under the caret in the real line.

use kernelpro_model::Severity;
use regex::Regex;
use std::sync::LazyLock;

#[derive(Debug, Clone, PartialEq)]
pub struct CompilerMessage {
    /// The file as the tool printed it; `None` for tool-level messages (ptxas, nvcc fatal).
    pub file: Option<String>,
    /// 1-based line, when given.
    pub line: Option<u32>,
    /// 0-based byte column when the tool gave one (gcc style) .
    pub col: Option<u32>,
    pub severity: Severity,
    pub code: Option<String>,
    pub message: String,
    /// The echoed source line and the caret's byte column in it.
    pub echo: Option<(String, usize)>,
    /// Which tool said it: nvcc, ptxas, host.
    pub tool: &'static str,
}

static NVCC_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<sev>catastrophic error|error|warning|remark|note)(?: #(?P<code>[0-9]+(?:-[A-Z])?))?: (?P<msg>.*)$").unwrap()
});
static GCC_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<sev>fatal error|error|warning|note): (?P<msg>.*)$",
    )
    .unwrap()
});
static END_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^At end of source: (?P<sev>catastrophic error|error|warning|remark)(?: #(?P<code>[0-9]+(?:-[A-Z])?))?: (?P<msg>.*)$").unwrap()
});
static TOOL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<tool>ptxas|nvcc|nvlink|fatbinary) (?P<sev>fatal|error|warning)\s*: (?P<msg>.*)$").unwrap()
});

fn severity(word: &str) -> Severity {
    match word {
        "warning" => Severity::Warning,
        "remark" | "note" => Severity::Information,
        _ => Severity::Error,
    }
}

pub fn parse(stderr: &str) -> Vec<CompilerMessage> {
    let lines: Vec<&str> = stderr.lines().collect();
    let mut out: Vec<CompilerMessage> = Vec::new();
    let mut open = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end_matches('\r');
        if let Some(c) = NVCC_RE.captures(line) {
            out.push(CompilerMessage {
                file: Some(c["file"].to_string()),
                line: c["line"].parse().ok(),
                col: None,
                severity: severity(&c["sev"]),
                code: c.name("code").map(|m| format!("#{}", m.as_str())),
                message: c["msg"].to_string(),
                echo: None,
                tool: "nvcc",
            });
            open = true;
        } else if let Some(c) = END_RE.captures(line) {
            out.push(CompilerMessage {
                file: None,
                line: None,
                col: None,
                severity: severity(&c["sev"]),
                code: c.name("code").map(|m| format!("#{}", m.as_str())),
                message: c["msg"].to_string(),
                echo: None,
                tool: "end-of-source",
            });
            open = true;
        } else if let Some(c) = GCC_RE.captures(line) {
            out.push(CompilerMessage {
                file: Some(c["file"].to_string()),
                line: c["line"].parse().ok(),
                col: c["col"].parse::<u32>().ok().map(|c| c.saturating_sub(1)),
                severity: severity(&c["sev"]),
                code: None,
                message: c["msg"].to_string(),
                echo: None,
                tool: "host",
            });
            open = true;
        } else if let Some(c) = TOOL_RE.captures(line) {
            let tool = match &c["tool"] {
                "ptxas" => "ptxas",
                "nvlink" => "nvlink",
                _ => "nvcc",
            };
            let sev = if &c["sev"] == "warning" { Severity::Warning } else { Severity::Error };
            out.push(CompilerMessage {
                file: None,
                line: None,
                col: None,
                severity: sev,
                code: None,
                message: c["msg"].trim().to_string(),
                echo: None,
                tool,
            });
            open = false;
        } else if open && !line.trim().is_empty() {
            let next_is_caret = lines.get(i + 1).is_some_and(|n| is_caret_line(n));
            let msg = out.last_mut().expect("open message");
            if next_is_caret {
                let caret = lines[i + 1].find('^').unwrap_or(0);
                msg.echo = Some((line.to_string(), caret));
                i += 1;
            } else if line.starts_with(char::is_whitespace) {
                msg.message.push('\n');
                msg.message.push_str(line.trim());
            } else {
                open = false;
            }
        } else {
            open = false;
        }
        i += 1;
    }
    out
}

fn is_caret_line(l: &str) -> bool {
    let t = l.trim();
    t == "^" && l.contains('^')
}

/// The 0-based byte column in `real_line` that the caret pointed at.
pub fn caret_column(real_line: &str, echo: &str, caret: usize) -> Option<u32> {
    let token: String = echo.get(caret..)?.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    // nvcc indents the echo by two spaces.
    let direct = caret.checked_sub(2)?;
    if token.is_empty() {
        let ch = echo.get(caret..)?.chars().next()?;
        return (real_line.get(direct..)?.starts_with(ch)).then_some(direct as u32);
    }
    if real_line.get(direct..).is_some_and(|rest| rest.starts_with(&token)) {
        return Some(direct as u32);
    }
    find_word(real_line, &token).map(|c| c as u32)
}

fn find_word(hay: &str, word: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(pos) = hay[from..].find(word) {
        let at = from + pos;
        let before = hay[..at].chars().next_back().is_none_or(|c| !is_ident(c));
        let after = hay[at + word.len()..].chars().next().is_none_or(|c| !is_ident(c));
        if before && after {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn check(stderr: &str, expected: expect_test::Expect) {
        let got: Vec<String> = parse(stderr)
            .iter()
            .map(|m| {
                format!(
                    "{}:{}:{} {} {} {:?} echo={:?}",
                    m.tool,
                    m.file.as_deref().unwrap_or("-"),
                    m.line.map_or("-".into(), |l| l.to_string()),
                    m.severity.as_str(),
                    m.code.as_deref().unwrap_or("-"),
                    m.message,
                    m.echo.as_ref().map(|(_, c)| *c)
                )
            })
            .collect();
        expected.assert_eq(&got.join("\n"));
    }

    #[test]
    fn nvcc_errors_warnings_and_ptxas() {
        check(
            r#"h.cuh(3): error: identifier "undefined_thing" is undefined
    return x * undefined_thing;
               ^

e.cu(7): warning #177-D: variable "s" was declared but never referenced
    __attribute__((shared)) float s[100000];
                                  ^

Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

k.cu(12): error: no instance of overloaded function "foo" matches the argument list
            argument types are: (int)
    foo(1);
    ^

At end of source: error: expected a "}"
2 errors detected in the compilation of "e.cu".
ptxas error   : Entry function '_Z1kPfi' uses too much shared data (0x61a80 bytes, 0xc000 max)
ptxas info    : 0 bytes gmem
nvcc fatal   : Unsupported gpu architecture 'compute_12'
x.cu:4:10: fatal error: missing.h: No such file or directory
"#,
            expect![[r#"
                nvcc:h.cuh:3 error - "identifier \"undefined_thing\" is undefined" echo=Some(15)
                nvcc:e.cu:7 warning #177-D "variable \"s\" was declared but never referenced" echo=Some(34)
                nvcc:k.cu:12 error - "no instance of overloaded function \"foo\" matches the argument list\nargument types are: (int)" echo=Some(4)
                end-of-source:-:- error - "expected a \"}\"" echo=None
                ptxas:-:- error - "Entry function '_Z1kPfi' uses too much shared data (0x61a80 bytes, 0xc000 max)" echo=None
                nvcc:-:- error - "Unsupported gpu architecture 'compute_12'" echo=None
                host:x.cu:4 error - "missing.h: No such file or directory" echo=None"#]],
        );
    }

    #[test]
    fn caret_columns() {
        assert_eq!(caret_column("  if (i < n) y[i] = zz + 1;", "    if (i < n) y[i] = zz + 1;", 22), Some(20));
        assert_eq!(
            caret_column("  __shared__ float s[100000];", "    __attribute__((shared)) float s[100000];", 34),
            Some(19)
        );
        assert_eq!(caret_column("\tint café = q;", "    int café = q;", 16), Some(13));
    }
}
