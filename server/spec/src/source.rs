//! Finds `// kernelpro: ...` lines in a source file and groups them: a block
//! directly above a `__global__` function belongs to that kernel. A block with
//! more than `let`s also reaches the next kernel across blank, preprocessor
//! (`#define`, with its continuation lines), comment, `template <…>` and
//! attribute lines; one that reaches no kernel is `detached` (a diagnostic).
//! Any other block holds file-wide `let`s.

use serde::{Deserialize, Serialize};

/// One spec line: the text after `kernelpro:` and where that text starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecLine {
    /// 0-based line number.
    pub line: u32,
    /// UTF-8 byte column of the first character of `text`.
    pub col: u32,
    /// The directive, trimmed (`let N = 1 << 24`).
    pub text: String,
}

/// The directives that make up a kernel's launch itself, as opposed to its
/// problem (buffers, scalars, lets, tune lists).
pub const LAUNCH_PARTS: [&str; 3] = ["grid", "block", "smem"];

/// Which of [`LAUNCH_PARTS`] the spec line `text` (`block = (16, 16)`) sets, if any.
pub fn launch_part(text: &str) -> Option<&'static str> {
    let (lhs, _) = text.split_once('=')?;
    LAUNCH_PARTS.into_iter().find(|part| *part == lhs.trim())
}

/// The spec block of one kernel, not yet interpreted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSpecRaw {
    pub kernel: String,
    /// The line that holds the kernel's name.
    pub kernel_line: u32,
    /// Names of the template parameters (`template <typename T, int B>` → `T`, `B`).
    pub template_params: Vec<String>,
    pub lines: Vec<SpecLine>,
}

/// All spec lines of a file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSpecs {
    pub kernels: Vec<KernelSpecRaw>,
    /// Spec lines not directly above a kernel; only `let` is valid there.
    pub file_lets: Vec<SpecLine>,
    /// Blocks with more than `let`s that attach to no kernel.
    #[serde(default)]
    pub detached: Vec<SpecLine>,
}

impl FileSpecs {
    pub fn kernel(&self, name: &str) -> Option<&KernelSpecRaw> {
        self.kernels.iter().find(|k| k.kernel == name)
    }
}

/// How many lines after a spec block a kernel's declaration may span.
const MAX_DECL_LINES: usize = 12;

/// Attribute-like macros that take parentheses before the kernel's name.
const ATTRIBUTES: [&str; 6] =
    ["__launch_bounds__", "__attribute__", "__align__", "__declspec", "alignas", "__cluster_dims__"];

pub fn parse_file(source: &str) -> FileSpecs {
    let lines: Vec<&str> = source.lines().collect();
    let mut specs = FileSpecs::default();
    let mut i = 0;
    while i < lines.len() {
        if spec_line(i, lines[i]).is_none() {
            i += 1;
            continue;
        }
        let mut block = Vec::new();
        while i < lines.len() {
            if let Some(l) = spec_line(i, lines[i]) {
                block.push(l);
            } else if !lines[i].trim_start().starts_with("//") {
                break;
            }
            i += 1;
        }
        let only_lets = block.iter().all(|l| l.text.starts_with("let ") || l.text.is_empty());
        let kernel = kernel_after(&lines, i)
            .or_else(|| if only_lets { None } else { kernel_after(&lines, next_code_line(&lines, i)?) });
        match kernel {
            Some((kernel, kernel_line, template_params)) => {
                specs.kernels.push(KernelSpecRaw { kernel, kernel_line, template_params, lines: block })
            }
            None if only_lets => specs.file_lets.extend(block),
            None => specs.detached.extend(block),
        }
    }
    specs
}

/// The first line from `start` that is code: blank, comment and preprocessor
/// lines (with `\` continuations) are skipped; another spec line ends the search.
fn next_code_line(lines: &[&str], start: usize) -> Option<usize> {
    let mut i = start;
    let mut in_comment = false;
    while i < lines.len() {
        let t = lines[i].trim();
        if in_comment {
            in_comment = !t.contains("*/");
        } else if spec_line(i, lines[i]).is_some() {
            return None;
        } else if t.starts_with("/*") {
            in_comment = !t.contains("*/");
        } else if t.starts_with('#') {
            while lines[i].trim_end().ends_with('\\') && i + 1 < lines.len() {
                i += 1;
            }
        } else if !t.is_empty() && !t.starts_with("//") {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn spec_line(index: usize, line: &str) -> Option<SpecLine> {
    let body = line.trim_start().strip_prefix("//")?.trim_start().strip_prefix("kernelpro:")?;
    let text = body.trim();
    let col = line.len() - body.trim_start().len();
    Some(SpecLine { line: index as u32, col: col as u32, text: text.to_string() })
}

/// The kernel declared starting at line `start`: its name, the line of the
/// name, and its template parameter names.
fn kernel_after(lines: &[&str], start: usize) -> Option<(String, u32, Vec<String>)> {
    let end = (start + MAX_DECL_LINES).min(lines.len());
    let mut decl = String::new();
    let mut line_starts = Vec::new();
    for line in &lines[start..end] {
        // A blank or preprocessor line means the spec block is not directly above a declaration.
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            break;
        }
        line_starts.push(decl.len());
        decl.push_str(line);
        decl.push('\n');
        if line.contains(['{', ';']) {
            break;
        }
    }
    let decl = &decl[..decl.find(['{', ';']).unwrap_or(decl.len())];
    let (template_params, rest_at) = template_header(decl);
    let rest = &decl[rest_at..];
    if !rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == "__global__") {
        return None;
    }
    let name_at = rest_at + function_name_offset(rest)?;
    let name_len = decl[name_at..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(0);
    let line = start + line_starts.iter().rposition(|s| *s <= name_at).unwrap_or(0);
    Some((decl[name_at..name_at + name_len].to_string(), line as u32, template_params))
}

/// Parameter names of a leading `template <...>` and the offset after it.
fn template_header(decl: &str) -> (Vec<String>, usize) {
    let trimmed = decl.trim_start();
    let Some(after_kw) = trimmed.strip_prefix("template") else {
        return (Vec::new(), 0);
    };
    let Some(open) = after_kw.find('<') else {
        return (Vec::new(), 0);
    };
    let mut depth = 0;
    let mut close = None;
    for (i, c) in after_kw.char_indices().skip(open) {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(close) = close else {
        return (Vec::new(), 0);
    };
    let params = split_top_level(&after_kw[open + 1..close])
        .into_iter()
        .filter_map(|(_, part)| {
            let declarator = part.split('=').next().unwrap_or("");
            declarator.split(|c: char| !(c.is_alphanumeric() || c == '_')).rfind(|w| !w.is_empty()).map(str::to_string)
        })
        .collect();
    let header_end = decl.len() - trimmed.len() + "template".len() + close + 1;
    (params, header_end)
}

/// Offset of the identifier before the first `(` that is not an attribute's.
fn function_name_offset(decl: &str) -> Option<usize> {
    let bytes = decl.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'(' {
            i += 1;
            continue;
        }
        let before = decl[..i].trim_end();
        let ident_start = before.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |p| p + 1);
        let ident = &before[ident_start..];
        if !ATTRIBUTES.contains(&ident) {
            return (!ident.is_empty()).then_some(ident_start);
        }
        let mut depth = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        i += 1;
    }
    None
}

/// Splits at commas outside parentheses and square brackets; each part comes with its byte offset, untrimmed.
pub fn split_top_level(text: &str) -> Vec<(usize, &str)> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push((start, &text[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push((start, &text[start..]));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(source: &str, expected: Expect) {
        let specs = parse_file(source);
        let mut out = String::new();
        for k in &specs.kernels {
            out += &format!("kernel {} at line {} template {:?}\n", k.kernel, k.kernel_line, k.template_params);
            for l in &k.lines {
                out += &format!("  {}:{} {}\n", l.line, l.col, l.text);
            }
        }
        for l in &specs.file_lets {
            out += &format!("file {}:{} {}\n", l.line, l.col, l.text);
        }
        for l in &specs.detached {
            out += &format!("detached {}:{} {}\n", l.line, l.col, l.text);
        }
        expected.assert_eq(&out);
    }

    #[test]
    fn launch_parts_are_the_launch_directives_only() {
        let parts: Vec<_> = [
            "grid = 4",
            "block = (16, 16)",
            " smem=1024",
            "blocks = 4",
            "B = in float[N]",
            "let grid_n = 2",
            "seed = 1",
        ]
        .into_iter()
        .map(launch_part)
        .collect();
        assert_eq!(parts, [Some("grid"), Some("block"), Some("smem"), None, None, None, None]);
    }

    #[test]
    fn groups_lines_above_kernels() {
        check(
            "// kernelpro: let N = 1 << 20\n\
             #include <cuda_fp16.h>\n\
             \n\
             // kernelpro: grid = ceil_div(N, 256)\n\
             //   kernelpro:   block = 256   \n\
             // a plain comment\n\
             __global__ void __launch_bounds__(256)\n\
             scale(float* x, int n) {}\n\
             // kernelpro: grid = 1\n\
             int host_only(int a);\n",
            expect![[r#"
                kernel scale at line 7 template []
                  3:14 grid = ceil_div(N, 256)
                  4:18 block = 256
                file 0:14 let N = 1 << 20
                detached 8:14 grid = 1
            "#]],
        );
    }

    #[test]
    fn specs_reach_their_kernel_across_defines_templates_and_attributes() {
        check(
            "// kernelpro: let N = 1 << 20\n\
             #include <cstdio>\n\
             \n\
             // kernelpro: grid = N / 256\n\
             // kernelpro: block = 256\n\
             #define TILE 32\n\
             #define SCALE(x) \\\n\
               ((x) * 2)\n\
             \n\
             /* the kernel */\n\
             template <typename T>\n\
             __launch_bounds__(256)\n\
             __global__ void scale(T* x, int n) {}\n\
             // kernelpro: block = 128\n\
             #define AFTER 1\n\
             __device__ float helper(float v) { return v; }\n\
             // kernelpro: grid = 1\n\
             #if 0\n\
             #endif\n\
             // kernelpro: block = 64\n\
             __global__ void next(float* y) {}\n\
             // kernelpro: y = out float[4]\n",
            expect![[r#"
                kernel scale at line 12 template ["T"]
                  3:14 grid = N / 256
                  4:14 block = 256
                kernel next at line 20 template []
                  19:14 block = 64
                file 0:14 let N = 1 << 20
                detached 13:14 block = 128
                detached 16:14 grid = 1
                detached 21:14 y = out float[4]
            "#]],
        );
    }

    #[test]
    fn reads_template_parameters() {
        check(
            "// kernelpro: instantiate = gemm<float, 128>\n\
             template <typename T, int TILE = 64>\n\
             __global__ void gemm(const T* a, T* c) {}\n\
             // kernelpro: block = 32\n\
             extern \"C\" __global__ void plain(int* x);\n",
            expect![[r#"
                kernel gemm at line 2 template ["T", "TILE"]
                  0:14 instantiate = gemm<float, 128>
                kernel plain at line 4 template []
                  3:14 block = 32
            "#]],
        );
    }
}
