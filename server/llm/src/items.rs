//! A small scanner for the top level of a CUDA file: where each function,
//! declaration and preprocessor line starts and ends, skipping comments and
//! literals. Enough to find a kernel and its helpers in a file or a reply,
//! without a full C++ parser (the reply may not even compile).

/// Macros that take parentheses before a function's name.
const ATTRIBUTES: [&str; 8] = [
    "__launch_bounds__",
    "__attribute__",
    "__align__",
    "__declspec",
    "alignas",
    "__cluster_dims__",
    "decltype",
    "__maxnreg__",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemKind {
    Preprocessor,
    Function {
        name: String,
        global: bool,
        device: bool,
    },
    /// A declaration, struct, alias or constant.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Byte range, from the first character of the declaration (after any
    /// comment above it) to the closing `}` or `;`.
    pub start: usize,
    pub end: usize,
    pub kind: ItemKind,
}

impl Item {
    pub fn function_name(&self) -> Option<&str> {
        match &self.kind {
            ItemKind::Function { name, .. } => Some(name),
            _ => None,
        }
    }

    pub fn is_global(&self) -> bool {
        matches!(self.kind, ItemKind::Function { global: true, .. })
    }

    pub fn is_device_helper(&self) -> bool {
        matches!(self.kind, ItemKind::Function { global: false, device: true, .. })
    }
}

/// The top-level items of `text`; the contents of `namespace` and
/// `extern "C"` blocks count as top level. Fails on an unclosed brace,
/// parenthesis, comment or literal (a truncated reply).
pub fn items(text: &str) -> Result<Vec<Item>, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        i = skip_blank(b, i)?;
        if i >= b.len() {
            return Ok(out);
        }
        match b[i] {
            b'#' => {
                let end = preprocessor_end(b, i);
                out.push(Item { start: i, end, kind: ItemKind::Preprocessor });
                i = end;
            }
            b'}' | b';' => i += 1, // the end of a namespace or extern "C" block
            _ => {
                let (item, next) = item_at(text, i)?;
                out.extend(item);
                i = next;
            }
        }
    }
}

/// The item starting at `start`, or none when it opens a block to descend into.
fn item_at(text: &str, start: usize) -> Result<(Option<Item>, usize), String> {
    let b = text.as_bytes();
    let mut i = start;
    let mut parens = 0usize;
    let mut first_parens = Vec::new();
    while i < b.len() {
        match b[i] {
            b'/' | b'"' | b'\'' if starts_skippable(b, i) => i = skip_skippable(b, i)?,
            b'(' => {
                if parens == 0 {
                    first_parens.push(i);
                }
                parens += 1;
                i += 1;
            }
            b')' => {
                parens = parens.checked_sub(1).ok_or_else(|| format!("unbalanced `)` at byte {i}"))?;
                i += 1;
            }
            b';' if parens == 0 => {
                return Ok((Some(Item { start, end: i + 1, kind: ItemKind::Other }), i + 1));
            }
            b'{' if parens == 0 => {
                let head = &text[start..i];
                let trimmed = head.trim_start();
                if trimmed.starts_with("namespace") || (trimmed.starts_with("extern") && first_parens.is_empty()) {
                    return Ok((None, i + 1));
                }
                let close = matching_brace(b, i)?;
                if let Some(name) = function_name(text, &first_parens).filter(|_| ends_like_signature(head)) {
                    let global = has_word(head, "__global__");
                    let device = has_word(head, "__device__");
                    let kind = ItemKind::Function { name, global, device };
                    return Ok((Some(Item { start, end: close, kind }), close));
                }
                // struct / class / enum / initializer: runs on to its `;`.
                i = close;
            }
            _ => i += 1,
        }
    }
    if parens > 0 {
        return Err("unclosed `(` at the end".to_owned());
    }
    Ok((Some(Item { start, end: b.len(), kind: ItemKind::Other }), b.len()))
}

/// A function head ends with its parameter list and maybe qualifiers
/// (`) const`, `) -> T`), not with `=` (an initializer) or a class head.
fn ends_like_signature(head: &str) -> bool {
    let Some(close) = head.rfind(')') else {
        return false;
    };
    let tail = &head[close + 1..];
    !tail.contains(['=', '(']) && !has_word(head.split('(').next().unwrap_or(""), "struct") && !has_word(head, "class ")
}

/// The identifier before the first top-level `(` that is not an attribute.
fn function_name(text: &str, parens: &[usize]) -> Option<String> {
    parens.iter().find_map(|&p| {
        let before = text[..p].trim_end();
        let name_start = before.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
        let name = &before[name_start..];
        let ok = !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) && !ATTRIBUTES.contains(&name);
        ok.then(|| name.to_owned())
    })
}

pub fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = text.as_bytes();
    text.match_indices(word).any(|(i, w)| {
        let end = i + w.len();
        (i == 0 || !ident(b[i - 1])) && (end == b.len() || !ident(b[end]))
    })
}

/// The index just past the `}` matching the `{` at `open`.
pub fn matching_brace(b: &[u8], open: usize) -> Result<usize, String> {
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'/' | b'"' | b'\'' if starts_skippable(b, i) => {
                i = skip_skippable(b, i)?;
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err("unclosed `{` at the end".to_owned())
}

fn starts_skippable(b: &[u8], i: usize) -> bool {
    match b[i] {
        b'/' => matches!(b.get(i + 1), Some(b'/') | Some(b'*')),
        b'"' => true,
        // A digit separator (1'000) is not a character literal.
        b'\'' => !(i > 0 && b[i - 1].is_ascii_alphanumeric()),
        _ => false,
    }
}

/// Past the comment or literal at `i`.
fn skip_skippable(b: &[u8], i: usize) -> Result<usize, String> {
    match (b[i], b.get(i + 1)) {
        (b'/', Some(b'/')) => Ok(b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| i + n + 1)),
        (b'/', Some(b'*')) => {
            let rest = &b[i + 2..];
            rest.windows(2).position(|w| w == b"*/").map(|n| i + 2 + n + 2).ok_or_else(|| "unclosed comment".to_owned())
        }
        (quote, _) => {
            let mut j = i + 1;
            while j < b.len() {
                match b[j] {
                    b'\\' => j += 2,
                    c if c == quote => return Ok(j + 1),
                    b'\n' => return Err("unclosed literal".to_owned()),
                    _ => j += 1,
                }
            }
            Err("unclosed literal".to_owned())
        }
    }
}

/// Past whitespace and comments.
fn skip_blank(b: &[u8], mut i: usize) -> Result<usize, String> {
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if b[i] == b'/' && starts_skippable(b, i) {
            i = skip_skippable(b, i)?;
        } else {
            break;
        }
    }
    Ok(i)
}

/// The end of a preprocessor line, following `\` continuations.
fn preprocessor_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        if b[i] == b'\n' && !(i > 0 && b[i - 1] == b'\\') {
            return i;
        }
        i += 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: expect_test::Expect) {
        let shown: Vec<String> = items(text)
            .unwrap()
            .iter()
            .map(|it| format!("{:?} {:?}", it.kind, &text[it.start..it.end].lines().next().unwrap_or("")))
            .collect();
        expected.assert_eq(&shown.join("\n"));
    }

    #[test]
    fn finds_top_level_items() {
        check(
            r#"#include <cuda.h>
#define CK(x) do { \
  x; } while (0)
// a helper
template <int B> __device__ __forceinline__ float sq(float v) { return v * v; /* } */ }
struct Pair { float a, b; };
constexpr int TILE = 32;
namespace cg = cooperative_groups;
extern "C" {
__global__ void __launch_bounds__(256) k(float* y, const char* s) {
  if (s[0] == '}') y[0] = sq<1>(1.0f);
}
}
int main() { k<<<1, 1>>>(nullptr, "{"); }
"#,
            expect_test::expect![[r##"
                Preprocessor "#include <cuda.h>"
                Preprocessor "#define CK(x) do { \\"
                Function { name: "sq", global: false, device: true } "template <int B> __device__ __forceinline__ float sq(float v) { return v * v; /* } */ }"
                Other "struct Pair { float a, b; };"
                Other "constexpr int TILE = 32;"
                Other "namespace cg = cooperative_groups;"
                Function { name: "k", global: true, device: false } "__global__ void __launch_bounds__(256) k(float* y, const char* s) {"
                Function { name: "main", global: false, device: false } "int main() { k<<<1, 1>>>(nullptr, \"{\"); }""##]],
        );
    }

    #[test]
    fn truncated_code_is_an_error() {
        assert!(items("__global__ void k(float* y) {\n  y[0] = 1;\n").is_err());
        assert!(items("__global__ void k(float* y").is_err());
        assert!(items("/* open").is_err());
    }
}
