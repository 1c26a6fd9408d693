//! What pre-processor lines a model-written candidate may add. A candidate is
//! compiled and its compiler messages go back to the model, so an `#include`
//! of any file would read that file to the model (its first identifier comes
//! back in the error), and `__has_include` would tell it whether a file exists.
//!
//! The candidate is checked after the pre-processor's own first phases, done
//! the way gcc and nvcc do them: `\r\n` and a lone `\r` end lines, trigraphs
//! (`??=`, `??/`, ...) are replaced (and, separately, left alone, since gnu
//! modes ignore them), backslash-newline and backslash-spaces-newline join
//! lines, comments become one space, string, character and raw string
//! literals are single tokens, and an `#include`'s `<...>` or `"..."` is one
//! header name (no comment inside). On those tokens:
//!
//! - a new `#include` must name one header (`<x>` or `"x"`, not a macro) that
//!   the compile would find in the CUDA toolkit's or CUTLASS's include
//!   directories ([`IncludePolicy`]), after resolving symlinks, or a C++
//!   standard header found in none of the project's directories; anything
//!   else (a file below the kernel's folder, `.env`, a symlink out of the
//!   project, an absolute path) is refused with one message, found or not;
//! - `#include_next`, `#import`, `#embed`, `#line`, pragmas other than
//!   `unroll`/`nounroll`/`once`, and other unusual directives are refused, as
//!   is a `#define`/`#undef` of a reserved name (the headers' configuration);
//! - a name holding `has_include`, `has_embed` or `pragma` (any case:
//!   `__has_include`, `_Pragma`, header wrappers such as `_CCCL_PRAGMA`), or
//!   a header's wrapper of `_Pragma` by another name (glibc's `__glibc_macro_warning1`),
//!   that is called, or passed on where it could be called, is refused unless
//!   the original has the same use; `_Pragma("unroll")` is allowed;
//! - a candidate from whose names such a word could be pasted together
//!   (`__has_ ## include`, by its own `##` or a header's concatenation macro)
//!   is refused.
//!
//! Directives the original already has stay. A refused candidate is never
//! compiled, and the refusal reads the same whether or not the file exists.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Where a candidate's new `#include`s may lead. The default allows none
/// but the C++ standard headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IncludePolicy {
    /// The kernel's own file: a candidate may include it (by canonical path).
    pub own_file: Option<PathBuf>,
    /// Directories the real compile searches before the toolkit's, in order:
    /// the kernel's folder, then the `-I`/`-isystem` directories of the
    /// settings and the compile database.
    pub search_dirs: Vec<PathBuf>,
    /// The CUDA toolkit's and CUTLASS's include directories: the only places a
    /// new include may resolve into.
    pub allowed_roots: Vec<PathBuf>,
}

/// The C++ and C standard library headers a kernel may include by `<name>`:
/// they come from the host compiler's own directories, never the project's.
const STANDARD_HEADERS: &[&str] = &[
    "algorithm",
    "array",
    "atomic",
    "bit",
    "bitset",
    "cassert",
    "cfloat",
    "chrono",
    "climits",
    "cmath",
    "complex",
    "cstddef",
    "cstdint",
    "cstdio",
    "cstdlib",
    "cstring",
    "functional",
    "initializer_list",
    "iostream",
    "iterator",
    "limits",
    "memory",
    "numeric",
    "numbers",
    "random",
    "string",
    "tuple",
    "type_traits",
    "utility",
    "vector",
    "assert.h",
    "float.h",
    "limits.h",
    "math.h",
    "stddef.h",
    "stdint.h",
    "stdio.h",
    "stdlib.h",
    "string.h",
];

/// Words that, inside a name, mark a macro or operator that reaches files or pragmas.
const CORES: [&str; 3] = ["has_include", "has_embed", "pragma"];

/// Directives a candidate may add freely (`include` and `pragma` are checked apart).
const PLAIN_DIRECTIVES: [&str; 13] = [
    "", "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif", "error", "warning",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ident,
    Number,
    Literal,
    HeaderName,
    Punct,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    kind: Kind,
    text: String,
}

impl Token {
    fn is(&self, punct: &str) -> bool {
        self.kind == Kind::Punct && self.text == punct
    }
}

/// One logical line: a directive (its tokens after `#`) or text.
#[derive(Debug, Default)]
struct Line {
    directive: bool,
    tokens: Vec<Token>,
}

/// Phases 1 and 2: line ends made `\n`, trigraphs replaced (when asked),
/// backslash (then spaces or tabs) newline removed.
fn splice(source: &str, trigraphs: bool) -> String {
    let unified = source.replace("\r\n", "\n").replace('\r', "\n");
    let replaced = if trigraphs {
        let mut out = String::with_capacity(unified.len());
        let mut rest = unified.as_str();
        while let Some(at) = rest.find("??") {
            out.push_str(&rest[..at]);
            let after = &rest[at + 2..];
            let sub = after.chars().next().and_then(|c| match c {
                '=' => Some('#'),
                '/' => Some('\\'),
                '\'' => Some('^'),
                '(' => Some('['),
                ')' => Some(']'),
                '!' => Some('|'),
                '<' => Some('{'),
                '>' => Some('}'),
                '-' => Some('~'),
                _ => None,
            });
            match sub {
                Some(c) => {
                    out.push(c);
                    rest = &after[1..];
                }
                None => {
                    out.push('?');
                    rest = &rest[at + 1..];
                }
            }
        }
        out.push_str(rest);
        out
    } else {
        unified
    };
    let chars: Vec<char> = replaced.chars().collect();
    let mut out = String::with_capacity(replaced.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\\' {
            let mut j = i + 1;
            while j < chars.len() && matches!(chars[j], ' ' | '\t' | '\x0b' | '\x0c' | '\0') {
                j += 1;
            }
            if chars.get(j) == Some(&'\n') {
                i = j + 1;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || !c.is_ascii()
}

/// A `\uXXXX` or `\UXXXXXXXX` at `i`, as the character it names and its length.
fn ucn(chars: &[char], i: usize) -> Option<(char, usize)> {
    let len = match chars.get(i + 1) {
        Some('u') => 4,
        Some('U') => 8,
        _ => return None,
    };
    let hex: String = chars.get(i + 2..i + 2 + len)?.iter().collect();
    let c = char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?;
    Some((c, len + 2))
}

/// Phase 3 and the split into logical lines.
fn lex(source: &str, trigraphs: bool) -> Vec<Line> {
    let chars: Vec<char> = splice(source, trigraphs).chars().collect();
    let mut lines = vec![Line::default()];
    let mut want_header = false;
    let mut i = 0;
    let push = |lines: &mut Vec<Line>, kind: Kind, text: String| {
        let line = lines.last_mut().unwrap();
        if line.tokens.is_empty() && !line.directive && kind == Kind::Punct && text == "#" {
            line.directive = true;
        } else {
            line.tokens.push(Token { kind, text });
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            lines.push(Line::default());
            want_header = false;
            i += 1;
            continue;
        }
        if c.is_whitespace() || c == '\0' {
            i += 1;
            continue;
        }
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i = (i + 2).min(chars.len());
            continue;
        }
        let header = std::mem::take(&mut want_header);
        if header && (c == '<' || c == '"') {
            let close = if c == '<' { '>' } else { '"' };
            if let Some(len) = chars[i + 1..].iter().take_while(|&&d| d != '\n').position(|&d| d == close) {
                push(&mut lines, Kind::HeaderName, chars[i..i + len + 2].iter().collect());
                i += len + 2;
                continue;
            }
        }
        if c == '"' || c == '\'' {
            let end = literal_end(&chars, i);
            push(&mut lines, Kind::Literal, chars[i..end].iter().collect());
            i = end;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && next.is_some_and(|d| d.is_ascii_digit())) {
            let start = i;
            i += 1;
            while i < chars.len() {
                let d = chars[i];
                if (matches!(d, '+' | '-') && matches!(chars[i - 1], 'e' | 'E' | 'p' | 'P'))
                    || ident_char(d)
                    || d == '.'
                    || (d == '\'' && chars.get(i + 1).is_some_and(|&e| ident_char(e)))
                {
                    i += 1;
                } else {
                    break;
                }
            }
            push(&mut lines, Kind::Number, chars[start..i].iter().collect());
            continue;
        }
        if ident_char(c) || (c == '\\' && ucn(&chars, i).is_some()) {
            let mut name = String::new();
            while i < chars.len() {
                if ident_char(chars[i]) {
                    name.push(chars[i]);
                    i += 1;
                } else if let Some((d, len)) = (chars[i] == '\\').then(|| ucn(&chars, i)).flatten() {
                    name.push(d);
                    i += len;
                } else {
                    break;
                }
            }
            let quote = chars.get(i).copied();
            if ["R", "LR", "uR", "UR", "u8R"].contains(&name.as_str()) && quote == Some('"') {
                let end = raw_literal_end(&chars, i);
                push(&mut lines, Kind::Literal, format!("{name}{}", chars[i..end].iter().collect::<String>()));
                i = end;
                continue;
            }
            if ["L", "u", "U", "u8"].contains(&name.as_str()) && matches!(quote, Some('"' | '\'')) {
                let end = literal_end(&chars, i);
                push(&mut lines, Kind::Literal, format!("{name}{}", chars[i..end].iter().collect::<String>()));
                i = end;
                continue;
            }
            let line = lines.last().unwrap();
            // An include's file, and `__has_include(<...>)`'s, is one header name.
            want_header = (line.directive
                && line.tokens.is_empty()
                && ["include", "include_next", "import", "embed"].contains(&name.as_str()))
                || name.to_lowercase().contains("has_include")
                || name.to_lowercase().contains("has_embed");
            push(&mut lines, Kind::Ident, name);
            continue;
        }
        let punct = if (c == '%' && next == Some(':')) || c == '#' {
            let width = if c == '#' { 1 } else { 2 };
            let double = if c == '#' {
                next == Some('#')
            } else {
                chars.get(i + 2) == Some(&'%') && chars.get(i + 3) == Some(&':')
            };
            i += if double { 2 * width } else { width };
            if double { "##" } else { "#" }.to_owned()
        } else {
            i += 1;
            c.to_string()
        };
        // `__has_include (` keeps the header-name state across the parenthesis.
        want_header = header && punct == "(";
        push(&mut lines, Kind::Punct, punct);
    }
    lines
}

/// The end of the string or character literal opening at `i`: its closing
/// quote, or the line's end (an unterminated one).
fn literal_end(chars: &[char], i: usize) -> usize {
    let quote = chars[i];
    let mut j = i + 1;
    while j < chars.len() && chars[j] != quote && chars[j] != '\n' {
        j += if chars[j] == '\\' && chars.get(j + 1).is_some_and(|&c| c != '\n') { 2 } else { 1 };
    }
    if chars.get(j) == Some(&quote) { j + 1 } else { j.min(chars.len()) }
}

/// The end of the raw string whose quote is at `i` (`R"d( ... )d"`); a
/// malformed one is scanned as an ordinary string (then more is seen as
/// code, never less).
fn raw_literal_end(chars: &[char], i: usize) -> usize {
    let delimiter: String = chars[i + 1..].iter().take_while(|&&c| c != '(').take(17).collect();
    if delimiter.len() > 16 || delimiter.chars().any(|c| c.is_whitespace() || "()\\\"".contains(c)) {
        return literal_end(chars, i);
    }
    let close: Vec<char> = format!("){delimiter}\"").chars().collect();
    let body = i + 1 + delimiter.chars().count() + 1;
    if body > chars.len() {
        return literal_end(chars, i);
    }
    match chars[body..].windows(close.len()).position(|w| w == close.as_slice()) {
        Some(at) => body + at + close.len(),
        None => literal_end(chars, i),
    }
}

/// What the checks need of one view of a file.
#[derive(Debug, Default)]
struct Seen {
    /// `name args` of each directive, tokens joined by one space.
    directives: HashMap<String, usize>,
    /// Each risky use of a name (`__has_include(...)`, `_Pragma(...)`) as its tokens.
    risky: HashMap<String, usize>,
    /// Every identifier and number outside directive names, for the paste check.
    names: BTreeSet<String>,
    numbers: BTreeSet<String>,
}

fn join(tokens: &[Token]) -> String {
    tokens.iter().map(|t| t.text.as_str()).collect::<Vec<_>>().join(" ")
}

/// Header macros that hand their argument to `_Pragma` under a name with no
/// core word (found by scanning the toolkit's, glibc's and libstdc++'s headers
/// for function-like macros passing a parameter to `_Pragma`/`__has_include`):
/// glibc's `__glibc_macro_warning1(GCC dependency "f")` is `_Pragma("GCC dependency \"f\"")`.
const WRAPPERS: [&str; 1] = ["macro_warning1"];

fn has_core(name: &str) -> bool {
    let lower = name.to_lowercase();
    CORES.iter().chain(&WRAPPERS).any(|c| lower.contains(c))
}

fn scan(source: &str, trigraphs: bool) -> Seen {
    let lines = lex(source, trigraphs);
    let mut seen = Seen::default();
    // Text tokens in order, directive lines left out (a macro call spans lines).
    let text: Vec<&Token> = lines.iter().filter(|l| !l.directive).flat_map(|l| &l.tokens).collect();
    for line in lines.iter().filter(|l| l.directive) {
        *seen.directives.entry(join(&line.tokens)).or_default() += 1;
        let tokens: Vec<&Token> = line.tokens.iter().skip(1).collect();
        risky_uses(&tokens, &mut seen.risky);
    }
    risky_uses(&text, &mut seen.risky);
    for line in &lines {
        let skip = usize::from(line.directive);
        for t in line.tokens.iter().skip(skip) {
            match t.kind {
                Kind::Ident => {
                    seen.names.insert(t.text.clone());
                }
                Kind::Number => {
                    seen.numbers.insert(t.text.clone());
                }
                _ => {}
            }
        }
    }
    seen
}

/// Uses of a name holding a core word that call it (`name(...)`, recorded
/// with its arguments) or could let it be called later (last token, or
/// passed as an argument: recorded as the name and what follows).
fn risky_uses(tokens: &[&Token], out: &mut HashMap<String, usize>) {
    for (i, t) in tokens.iter().enumerate() {
        if t.kind != Kind::Ident || !has_core(&t.text) {
            continue;
        }
        let next = tokens.get(i + 1);
        // Pasted onto something (`__has_include ## _next`, `_CCCL_ ## HAS_INCLUDE`): a new name, also risky.
        let pasted = next.is_some_and(|n| n.is("##")) || (i > 0 && tokens[i - 1].is("##"));
        let key = match next {
            _ if pasted => {
                let around: Vec<Token> =
                    tokens[i.saturating_sub(1)..tokens.len().min(i + 3)].iter().map(|t| (*t).clone()).collect();
                join(&around)
            }
            Some(n) if n.is("(") => {
                let mut depth = 0;
                let mut end = i + 1;
                for (j, u) in tokens.iter().enumerate().skip(i + 1) {
                    end = j;
                    if u.is("(") {
                        depth += 1;
                    } else if u.is(")") {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                }
                let call: Vec<Token> = tokens[i..=end].iter().map(|t| (*t).clone()).collect();
                if harmless_pragma(&call) {
                    continue;
                }
                join(&call)
            }
            Some(n) if !(n.is(",") || n.is(")")) => continue,
            _ => {
                let around: Vec<Token> = tokens[i..tokens.len().min(i + 4)].iter().map(|t| (*t).clone()).collect();
                join(&around)
            }
        };
        *out.entry(key).or_default() += 1;
    }
}

/// `_Pragma("unroll")`, `_Pragma("unroll 4")`, `_Pragma("nounroll")`.
fn harmless_pragma(call: &[Token]) -> bool {
    let [name, open, arg, close] = call else { return false };
    let Some(body) = arg.text.strip_prefix('"').and_then(|b| b.strip_suffix('"')) else { return false };
    name.text == "_Pragma"
        && open.is("(")
        && close.is(")")
        && arg.kind == Kind::Literal
        && matches!(body.split_whitespace().next(), Some("unroll" | "nounroll"))
        && body.chars().all(|c| c.is_ascii_alphanumeric() || " ()".contains(c))
}

/// A reserved name: `__x` or `_X` (the compiler's and the headers' own macros).
fn reserved(name: &str) -> bool {
    name.starts_with("__") || (name.starts_with('_') && name[1..].starts_with(|c: char| c.is_ascii_uppercase()))
}

/// Words a pasted name must not hold, in the spellings the compiler and the
/// headers use (pasting is case-sensitive).
const PASTE_CORES: [&str; 7] =
    ["has_include", "HAS_INCLUDE", "has_embed", "HAS_EMBED", "_Pragma", "PRAGMA", "macro_warning1"];

/// A way to paste a core word together from the candidate's own names (at
/// least two pieces: the end of one name, whole names, the start of one), as
/// its pieces.
fn pasted_core(seen: &Seen) -> Option<Vec<String>> {
    for core in PASTE_CORES {
        let n = core.len();
        // from[k]: core[..k] can be built, the last piece ending a name; the pieces so far.
        let mut from: Vec<Option<Vec<String>>> = vec![None; n + 1];
        for k in 1..n {
            if seen.names.iter().chain(&seen.numbers).any(|name| name.ends_with(&core[..k])) {
                from[k] = Some(vec![core[..k].to_owned()]);
            }
        }
        for k in 1..n {
            let Some(pieces) = from[k].clone() else { continue };
            let rest = &core[k..];
            if seen.names.iter().any(|name| name.starts_with(rest)) {
                return Some([pieces, vec![rest.to_owned()]].concat());
            }
            for name in seen.names.iter().filter(|name| rest.starts_with(name.as_str()) && name.len() < rest.len()) {
                if from[k + name.len()].is_none() {
                    from[k + name.len()] = Some([pieces.clone(), vec![name.clone()]].concat());
                }
            }
        }
    }
    None
}

/// Why a new `#include` of `header` (with its `<>` or `""`) is refused, if it is.
fn include_problem(header: &str, policy: &IncludePolicy) -> Option<String> {
    let refused = || {
        Some(format!(
            "`#include {header}` is not a CUDA toolkit, CUTLASS or C++ standard header (a candidate may add only those)"
        ))
    };
    let name = &header[1..header.len() - 1];
    if name.is_empty() || name.contains('\0') {
        return refused();
    }
    let canonical = |p: &Path| p.canonicalize().ok();
    let roots: Vec<PathBuf> = policy.allowed_roots.iter().filter_map(|r| canonical(r)).collect();
    let own = policy.own_file.as_deref().and_then(canonical);
    let allowed = |found: &Path| match canonical(found) {
        Some(real) => own.as_ref() == Some(&real) || roots.iter().any(|r| real.starts_with(r)),
        None => false,
    };
    // Where the compile would find it: the first search directory holding
    // it (an absolute name is found wherever it is), then the toolkit's.
    let candidates: Vec<PathBuf> = if Path::new(name).is_absolute() {
        vec![PathBuf::from(name)]
    } else {
        policy.search_dirs.iter().chain(&policy.allowed_roots).map(|d| d.join(name)).collect()
    };
    match candidates.iter().find(|p| p.symlink_metadata().is_ok()) {
        Some(found) if allowed(found) => None,
        Some(_) => refused(),
        None if header.starts_with('<') && STANDARD_HEADERS.contains(&name) => None,
        None => refused(),
    }
}

/// Refuses `candidate` when it adds a pre-processor line, or a use of a name,
/// that could read a file or tell whether one exists; the message says which,
/// and never whether a refused file exists.
pub fn check_candidate(original: &str, candidate: &str, policy: &IncludePolicy) -> Result<(), String> {
    let count = |s: &str| s.matches("??=").count() + s.matches("??/").count();
    if count(candidate) > count(original) {
        return Err(
            "the candidate was not compiled: it uses a trigraph (`??=` or `??/`); write `#` and `\\`".to_owned()
        );
    }
    for trigraphs in [true, false] {
        check_view(&scan(original, trigraphs), &scan(candidate, trigraphs), policy)
            .map_err(|problem| format!("the candidate was not compiled: {problem}"))?;
    }
    Ok(())
}

fn check_view(before: &Seen, after: &Seen, policy: &IncludePolicy) -> Result<(), String> {
    let added = |now: &HashMap<String, usize>, then: &HashMap<String, usize>| {
        let mut new: Vec<String> =
            now.iter().filter(|(k, n)| **n > then.get(*k).copied().unwrap_or(0)).map(|(k, _)| k.clone()).collect();
        new.sort();
        new
    };
    if let Some(use_) = added(&after.risky, &before.risky).first() {
        let name = use_.split(' ').next().unwrap_or_default();
        return Err(format!(
            "it uses `{name}` (`{use_}`), which a kernel rewrite must not add: it reaches files or pragmas"
        ));
    }
    if let Some(pieces) = pasted_core(after) {
        return Err(format!(
            "its names could be pasted into `{}` (from {}, as `__has_ ## include` would), which reaches files or pragmas; rename them",
            pieces.concat(),
            pieces.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(" + ")
        ));
    }
    // Computed includes are refused even where the original has one: the
    // candidate could redefine its macro.
    for directive in after.directives.keys() {
        let mut words = directive.splitn(2, ' ');
        let (name, args) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
        let header = (args.starts_with('<') && args.ends_with('>') && args.len() > 1)
            || (args.starts_with('"') && args.ends_with('"') && args.len() > 1);
        if ["include", "include_next", "import", "embed"].contains(&name) && !header {
            return Err(format!(
                "`#{directive}` does not name a header in quotes or angle brackets (a computed include is not allowed)"
            ));
        }
    }
    for directive in added(&after.directives, &before.directives) {
        let mut words = directive.splitn(2, ' ');
        let (name, args) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
        let problem = match name {
            "include" => include_problem(args, policy),
            "pragma" => {
                let word = args.split(' ').next().unwrap_or("");
                (!["unroll", "nounroll", "once"].contains(&word))
                    .then(|| format!("`#pragma {args}`: a candidate may add only `#pragma unroll`"))
            }
            "define" | "undef" => {
                let macro_name = args.split([' ', '(']).next().unwrap_or_default();
                reserved(macro_name).then(|| {
                    format!(
                        "`#{name} {macro_name}`: a candidate may not define or undefine a reserved name (the toolkit's headers read them)"
                    )
                })
            }
            n if PLAIN_DIRECTIVES.contains(&n) => None,
            n => Some(format!("`#{n}` is not a directive a kernel rewrite may add")),
        };
        if let Some(problem) = problem {
            return Err(problem);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGINAL: &str =
        "#include <cstdio>\n#include \"../common/util.h\"\n__global__ void k(float* y) { y[0] = 1.0f; }\n";

    /// A toolkit with `cuda_fp16.h` and `cooperative_groups/reduce.h`, and
    /// CUTLASS with `cute/tensor.hpp`, under a temporary folder.
    fn policy() -> (tempfile::TempDir, IncludePolicy) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            "toolkit/include/cuda_fp16.h",
            "toolkit/include/cooperative_groups/reduce.h",
            "cutlass/include/cute/tensor.hpp",
        ] {
            std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
            std::fs::write(root.join(file), "").unwrap();
        }
        std::fs::create_dir_all(root.join("project")).unwrap();
        std::fs::write(root.join("project/k.cu"), ORIGINAL).unwrap();
        let policy = IncludePolicy {
            own_file: Some(root.join("project/k.cu")),
            search_dirs: vec![root.join("project")],
            allowed_roots: vec![root.join("toolkit/include"), root.join("cutlass/include")],
        };
        (dir, policy)
    }

    /// The original with `added` above its kernel: accepted, or refused with a message holding `word`.
    fn check_with(policy: &IncludePolicy, added: &str, expected: Option<&str>) {
        let candidate = ORIGINAL.replace("__global__", &format!("{added}\n__global__"));
        match (check_candidate(ORIGINAL, &candidate, policy), expected) {
            (Ok(()), None) => {}
            (Err(e), Some(word)) => assert!(e.contains(word), "{added:?}: {e}"),
            (got, want) => panic!("{added:?}: got {got:?}, wanted {want:?}"),
        }
    }

    fn check(added: &str, expected: Option<&str>) {
        let (_dir, policy) = policy();
        check_with(&policy, added, expected);
    }

    const REFUSED: &str = "is not a CUDA toolkit, CUTLASS or C++ standard header";

    #[test]
    fn candidates_may_add_toolkit_headers_and_plain_directives() {
        check("#include <cuda_fp16.h>", None);
        check("#include \"cute/tensor.hpp\"", None);
        check("#include <cooperative_groups/reduce.h>", None);
        check("#include <cstdint>", None);
        check("#include \"k.cu\"", None);
        check("#define TILE 32\n#if TILE > 16\n#endif\n#undef TILE", None);
        check("#pragma unroll 4", None);
        check("// #include \"/etc/passwd\"", None);
        check("/* #include \"/etc/passwd\" */", None);
        check("const char* s = \"#include </etc/passwd>\";", None);
        check("const char* s = \"/*\"; int x; // */", None);
        check("char c = '\"'; int n = 1'000'000; char q = L'x';", None);
        check("const char* r = R\"x(\n#include \"/etc/passwd\" )\" )x\";", None);
        check("#define CAT(a, b) a##b\nint CAT(tile, _width) = 4;", None);
        check("_Pragma(\"unroll 4\") for (;;) {}", None);
        check("CUTLASS_PRAGMA_UNROLL\nfor (;;) {}", None);
        // The original's own `#include "../common/util.h"` stays (once).
        check("int unrelated;", None);
    }

    #[test]
    fn candidates_may_not_reach_other_files() {
        check("#include \"/etc/passwd\"", Some(REFUSED));
        check("#include </home/u/.ssh/id_rsa>", Some(REFUSED));
        check("#include \"../../secret.h\"", Some(REFUSED));
        check("#include \"cute/../../../etc/passwd\"", Some(REFUSED));
        check("#include <cuda_fp16.h/../../../../etc/passwd>", Some(REFUSED));
        check("#define F \"/etc/passwd\"\n#include F", Some("computed include"));
        check("#  include  \"/etc/passwd\"", Some(REFUSED));
        check("#inc\\\nlude \"/etc/passwd\"", Some(REFUSED));
        check("/* a\n */ #include \"/etc/passwd\"", Some(REFUSED));
        check("# /* x */ include \"/etc/passwd\"", Some(REFUSED));
        check("%:include \"/etc/passwd\"", Some(REFUSED));
        check("??=include \"/etc/passwd\"", Some("trigraph"));
        check("#include_next <cstdio>", Some("#include_next"));
        check("#import \"/etc/passwd\"", Some("#import"));
        check("#embed \"/etc/passwd\"", Some("#embed"));
        check("#line 1 \"/etc/passwd\"", Some("#line"));
        check("#pragma GCC dependency \"/etc/passwd\"", Some("pragma"));
        check("#pragma push_macro(\"k\")", Some("push_macro"));
        check("_Pragma(\"push_macro(\\\"k\\\")\")", Some("_Pragma"));
        check("_Pragma(\"GCC dependency \\\"/etc/passwd\\\"\")", Some("_Pragma"));
        check("_Pragma\n(\"GCC dependency \\\"/etc/passwd\\\"\")", Some("_Pragma"));
        check("#if __has_include(\"/etc/passwd\")\n#endif", Some("__has_include"));
        check("#if __has_include_next(<cstdio>)\n#endif", Some("__has_include_next"));
        check("#define H __has_include\n", Some("__has_include"));
        check("#define H(x) __has_include(x)\n", Some("__has_include"));
        check("#define H(x) __has_include ## x\n#if H(_next)(<cstdio>)\n#endif", Some("__has_include"));
        check("#define H(x) x ## HAS_INCLUDE\n#if H(_CCCL_)(\"/etc/passwd\")\n#endif", Some("HAS_INCLUDE"));
        check("#if __glibc_has_include(\"/etc/passwd\")\n#endif", Some("__glibc_has_include"));
        check("_CCCL_PRAGMA(GCC dependency \"/etc/passwd\")", Some("_CCCL_PRAGMA"));
        check("__glibc_macro_warning1(GCC dependency \"/etc/passwd\")", Some("__glibc_macro_warning1"));
        check("int a = 0xFF'FF; _Pragma(\"GCC dependency \\\"/etc/passwd\\\"\")", Some("_Pragma"));
        check("int a = 1'000; /*'*/ _Pragma(\"x\")", Some("_Pragma"));
        check("#define __CUDA_ARCH__ \"/etc/passwd\"", Some("reserved"));
        check("#undef _CCCL_STD_VER", Some("reserved"));
        check("_Pr\\u0061gma(\"GCC dependency \\\"/etc/passwd\\\"\")", Some("_Pragma"));
    }

    /// Each spelling of issue 30 that hid an include or a probe from the
    /// earlier check.
    #[test]
    fn line_ends_splices_and_pastes_do_not_hide_directives() {
        // A lone `\r` ends a line for gcc: the include is a directive.
        check("int a;\r#include \"/etc/passwd\"\r", Some(REFUSED));
        check("int a; // note\r#include \"/etc/passwd\"", Some(REFUSED));
        check("int a;\r\n#include \"/etc/passwd\"\r\n", Some(REFUSED));
        // Backslash, spaces, newline is a splice (gcc warns and joins).
        check("// note \\   \n#include \"/etc/passwd\"\n#include \"/etc/passwd\"", Some(REFUSED));
        check("#inc\\ \t\nlude \"/etc/passwd\"", Some(REFUSED));
        check("/\\ \n* hidden? *\\  \n/ #include \"/etc/passwd\"", Some(REFUSED));
        check("// ??/\n#include \"/etc/passwd\"", Some("trigraph"));
        // A header name is one token: no comment inside it.
        check("#include <cuda_fp16.h/*x>\n#include \"/etc/passwd\" // */", Some(REFUSED));
        // Token pasting, by the candidate's `##` or a header's macro.
        check("#define P(a, b) a ## b\n#if P(__has_, include)(\"/etc/passwd\")\n#endif", Some("has_include"));
        check("#define P(a, b) a %:%: b\n#if P(__has_inc, lude)(\"/etc/passwd\")\n#endif", Some("has_include"));
        check("#if _CCCL_PP_CAT(__has, _include)(\"/etc/passwd\")\n#endif", Some("has_include"));
        check("#if _CCCL_PP_CAT(__HAS, _INCLUDE)(\"/etc/passwd\")\n#endif", Some("HAS_INCLUDE"));
        check("P(_Pra, gma)(\"GCC dependency \\\"/etc/passwd\\\"\")", Some("`_Pra` + `gma`"));
        // A raw string does not hide what follows it on the line.
        check("const char* r = R\"x(\n)x\" _Pragma(\"GCC dependency \\\"/etc/passwd\\\"\") \"\";", Some("_Pragma"));
    }

    #[test]
    fn relative_includes_below_the_kernel_and_symlinks_are_refused() {
        let (dir, policy) = policy();
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join(".ssh")).unwrap();
        std::fs::write(project.join(".ssh/id_rsa"), "SECRETKEY").unwrap();
        std::fs::write(project.join(".env"), "TOKEN=SECRET").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", project.join("cuda_fp16.h")).unwrap();
        std::os::unix::fs::symlink(project.join(".env"), project.join("config.h")).unwrap();
        for header in ["\".ssh/id_rsa\"", "\".env\"", "<.env>", "\"config.h\"", "<cuda_fp16.h>", "\"./k.cu/../.env\""] {
            check_with(&policy, &format!("#include {header}"), Some(REFUSED));
        }
        // The same words whether or not the file exists: the refusal tells nothing.
        let missing =
            check_candidate(ORIGINAL, &ORIGINAL.replace("__global__", "#include \".nothing\"\n__global__"), &policy);
        let present =
            check_candidate(ORIGINAL, &ORIGINAL.replace("__global__", "#include \".env\"\n__global__"), &policy);
        assert_eq!(missing.unwrap_err().replace(".nothing", "X"), present.unwrap_err().replace(".env", "X"));
        // A symlink inside the toolkit that leaves it is refused too.
        std::os::unix::fs::symlink(project.join(".env"), dir.path().join("toolkit/include/evil.h")).unwrap();
        check_with(&policy, "#include <evil.h>", Some(REFUSED));
        // The kernel's own file may be included by its path.
        check_with(&policy, "#include \"k.cu\"", None);
    }

    #[test]
    fn the_originals_directives_stay() {
        let original = "#pragma GCC diagnostic ignored \"-Wunused\"\n#if __has_include(<cuda_fp16.h>)\n#include <cuda_fp16.h>\n#endif\n__global__ void k() {}\n";
        let (_dir, policy) = policy();
        let moved = original.replace("__global__ void k() {}", "__global__ void k() { int x = 0; }");
        assert_eq!(check_candidate(original, &moved, &policy), Ok(()));
        let probing = moved.replace("<cuda_fp16.h>)", "\"/etc/passwd\")");
        assert!(check_candidate(original, &probing, &policy).unwrap_err().contains("__has_include"));
    }
}

#[cfg(test)]
mod corpus {
    use super::*;

    /// Every CUDA file of the repository (examples, fixtures, benchmarks) is
    /// accepted as its own candidate, and with a `__has_ ## include` paste added
    /// is refused: the checks do not get in the way of ordinary kernels.
    #[test]
    fn the_repositorys_kernels_pass_as_their_own_candidates() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        let mut work = vec![root.clone()];
        while let Some(dir) = work.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if entry.file_type().unwrap().is_dir()
                    && !name.starts_with('.')
                    && name != "target"
                    && name != "node_modules"
                {
                    work.push(path);
                } else if name.ends_with(".cu") || name.ends_with(".cuh") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() > 100, "{}", files.len());
        let mut refused = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            if let Err(e) = check_candidate(&text, &text, &IncludePolicy::default()) {
                refused.push(format!("{}: {e}", file.display()));
            }
            let probe =
                format!("{text}\n#define KP_CAT(a, b) a ## b\n#if KP_CAT(__has_, include)(\"/etc/passwd\")\n#endif\n");
            assert!(check_candidate(&text, &probe, &IncludePolicy::default()).is_err(), "{}", file.display());
        }
        assert!(refused.is_empty(), "{} of {} refused:\n{}", refused.len(), files.len(), refused.join("\n"));
    }
}

#[cfg(test)]
mod fuzz {
    //! A differential check against gcc's own pre-processor (the one nvcc
    //! runs): random candidates built from the spellings that fooled earlier
    //! checks; every candidate the check accepts must pre-process to the same
    //! text and messages whether the secret file exists or not, and never show it.
    use super::*;
    use std::process::Command;

    const PIECES: &[&str] = &[
        "#include \"SECRET\"",
        "#include <SECRET>",
        "#include \".env\"",
        "#include <.env>",
        "#if __has_include(\".env\")\n#error present\n#endif\n",
        "#if ",
        "#endif\n",
        "#error present\n",
        "\\\n",
        "\\ \n",
        "\\\t \n",
        "\r",
        "\r\n",
        "\n",
        "\n",
        "\n",
        "/*",
        "*/",
        "//",
        "??/",
        "%:",
        "#",
        "# ",
        "include",
        "inc",
        "lude",
        " \".env\"",
        "\"",
        "'",
        "R\"x(",
        ")x\"",
        " ",
        "#define P(a, b) a ## b\n",
        "P(__has_, include)(\".env\")",
        "P(_Pra, gma)(\"GCC dependency \\\".env\\\"\")",
        "_Pragma(\"GCC dependency \\\".env\\\"\")",
        "__glibc_macro_warning1(GCC dependency \".env\")",
        "#define F \".env\"\n",
        "F",
        "int x;",
        "int n = 1'000;",
        "#pragma unroll\n",
        "#include <cuda_fp16.h>\n",
        // Issue 30's shapes: the next include, a header name made by a macro,
        // links in the project (one named like a toolkit header), imports.
        "#include_next \".env\"\n",
        "#include_next <SECRET>\n",
        "__has_include_next(\".env\")",
        "#import \".env\"\n",
        "%:include \".env\"\n",
        "#define H <SECRET>\n#include H\n",
        "#define S(x) #x\n#include S(.env)\n",
        "#define E \".e\" \"nv\"\n",
        "#include E\n",
        "#include \"link.h\"\n",
        "#include \"cuda_fp16.h\"\n",
        "#if __has_include(\"link.h\")\n#error present\n#endif\n",
        "??/\n",
        "\\\r",
        "\\ \r\n",
    ];

    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// `g++ -E` of `text` as `dir/k.cu` (gnu++17, then with trigraphs): its
    /// output and messages together.
    fn preprocess(dir: &Path, text: &str) -> String {
        std::fs::write(dir.join("k.cu"), text).unwrap();
        let mut all = String::new();
        for extra in [None, Some("-trigraphs")] {
            let out = Command::new("g++")
                .args(["-E", "-x", "c++", "-std=gnu++17"])
                .args(extra)
                .arg("k.cu")
                .current_dir(dir)
                .output()
                .expect("g++ runs (nvcc needs it too)");
            all.push_str(&String::from_utf8_lossy(&out.stdout));
            all.push_str(&String::from_utf8_lossy(&out.stderr));
            all.push_str(&format!("exit {:?}\n", out.status.code()));
        }
        all
    }

    #[test]
    fn accepted_candidates_preprocess_the_same_with_or_without_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        let toolkit = dir.path().join("toolkit");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&toolkit).unwrap();
        std::fs::write(toolkit.join("cuda_fp16.h"), "").unwrap();
        let secret = project.join(".env");
        let hidden = dir.path().join("hidden");
        const LEAK: &str = "LEAKWORD_7f3a";
        std::fs::write(&hidden, format!("int {LEAK};\n")).unwrap();
        // Links in the project to the file outside it: their text must never come through.
        std::os::unix::fs::symlink(&hidden, project.join("link.h")).unwrap();
        std::os::unix::fs::symlink(&hidden, project.join("cuda_fp16.h")).unwrap();
        let policy = IncludePolicy {
            own_file: Some(project.join("k.cu")),
            search_dirs: vec![project.clone()],
            allowed_roots: vec![toolkit.clone()],
        };
        let original = "int k(float* y) { return 0; }\n";
        // The oracle sees a leak where there is one: a lone `\r` before the include.
        let leaky = format!("int a;\r#include \".env\"\r{original}");
        std::fs::copy(&hidden, &secret).unwrap();
        let with = preprocess(&project, &leaky);
        std::fs::remove_file(&secret).unwrap();
        assert!(with.contains(LEAK) && with != preprocess(&project, &leaky), "{with}");
        assert!(check_candidate(original, &leaky, &policy).is_err());
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..250 {
            let mut snippet = String::new();
            for _ in 0..1 + rng.below(7) {
                snippet.push_str(&PIECES[rng.below(PIECES.len())].replace("SECRET", &secret.display().to_string()));
            }
            let candidate = format!("{snippet}\n{original}");
            if check_candidate(original, &candidate, &policy).is_err() {
                refused += 1;
                continue;
            }
            accepted += 1;
            std::fs::copy(&hidden, &secret).unwrap();
            let with = preprocess(&project, &candidate);
            std::fs::remove_file(&secret).unwrap();
            let without = preprocess(&project, &candidate);
            assert!(!with.contains(LEAK), "accepted, and the file's text came through:\n{candidate:?}\n{with}");
            assert_eq!(with, without, "accepted, and the output tells whether the file exists:\n{candidate:?}");
        }
        eprintln!("{accepted} candidates accepted (each pre-processed 4 times), {refused} refused");
        // Both sides are exercised.
        assert!(accepted >= 50 && refused >= 50, "{accepted} accepted, {refused} refused");
    }
}
