//! What pre-processor lines a model-written candidate may add. A candidate is
//! compiled and its compiler messages go back to the model, so an `#include`
//! of any file would read that file to the model (its first identifier comes
//! back in the error). New `#include`s name headers by a relative path
//! without `..`; computed includes (`#include MACRO`), `__has_include`,
//! `_Pragma`, `#line`, `#embed`, `#include_next`, other pragmas than
//! `unroll`/`once`, and trigraph or digraph spellings of `#` are refused
//! before anything is compiled. Directives the original already has stay.

use std::collections::HashMap;

/// Identifiers that reach files or pragmas from inside expressions and macros.
const FORBIDDEN_IDENTIFIERS: [&str; 5] = ["__has_include", "__has_include_next", "__has_embed", "_Pragma", "__pragma"];

/// Directives a candidate may add freely.
const PLAIN_DIRECTIVES: [&str; 14] = [
    "", "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif", "error", "warning",
    "include",
];

/// What the pre-processor sees of `source`: its directives (name and the
/// rest, whitespace collapsed) and its identifiers, with comments removed and
/// line continuations joined. One pass, no recursion.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    directives: HashMap<(String, String), usize>,
    identifiers: HashMap<String, usize>,
    trigraphs: usize,
}

fn scan(source: &str) -> Seen {
    let mut seen = Seen { trigraphs: source.matches("??=").count() + source.matches("??/").count(), ..Seen::default() };
    // Phase 2: join continued lines.
    let joined = source.replace("\\\r\n", "").replace("\\\n", "");
    let chars: Vec<char> = joined.chars().collect();
    // Phase 3: logical lines with comments replaced by one space; string and
    // character literals kept but not scanned (they end at a line's end, so a
    // raw string is scanned as code: stricter, never looser).
    let mut lines: Vec<String> = vec![String::new()];
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if next == Some('*') => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    i += 1;
                }
                i += 2;
                lines.last_mut().unwrap().push(' ');
                continue;
            }
            '\'' if in_number(lines.last().unwrap()) => lines.last_mut().unwrap().push(c),
            '"' | '\'' => {
                let line = lines.last_mut().unwrap();
                line.push(c);
                i += 1;
                while i < chars.len() && chars[i] != c && chars[i] != '\n' {
                    if chars[i] == '\\' && i + 1 < chars.len() && chars[i + 1] != '\n' {
                        line.push(chars[i]);
                        i += 1;
                    }
                    line.push(chars[i]);
                    i += 1;
                }
                if chars.get(i) == Some(&c) {
                    line.push(c);
                    i += 1;
                }
                continue;
            }
            '\n' => lines.push(String::new()),
            _ => lines.last_mut().unwrap().push(c),
        }
        i += 1;
    }
    for line in &lines {
        let t = line.trim_start();
        let rest = t.strip_prefix('#').or_else(|| t.strip_prefix("%:")).or_else(|| t.strip_prefix("??="));
        if let Some(rest) = rest {
            let rest = rest.trim_start();
            let name_len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let (name, args) = rest.split_at(name_len);
            let args = args.split_whitespace().collect::<Vec<_>>().join(" ");
            *seen.directives.entry((name.to_owned(), args)).or_default() += 1;
        }
        for ident in identifiers_outside_literals(line) {
            if FORBIDDEN_IDENTIFIERS.contains(&ident) {
                *seen.identifiers.entry(ident.to_owned()).or_default() += 1;
            }
        }
    }
    seen
}

/// Whether `before` ends inside a number, where `'` separates digits
/// (`1'000`, `0xFF'FF`) instead of starting a character literal.
fn in_number(before: &str) -> bool {
    let token =
        before.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '\'')).next().unwrap_or("");
    token.starts_with(|c: char| c.is_ascii_digit())
}

/// Identifiers of a logical line, skipping string and character literals.
fn identifiers_outside_literals(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\'' && in_number(&line[..i]) {
            i += 1;
        } else if b == b'"' || b == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != b {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if b.is_ascii_alphabetic() || b == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(&line[start..i]);
        } else {
            i += 1;
        }
    }
    out
}

/// Why `args` of a new `#include` is refused, if it is.
fn include_problem(args: &str) -> Option<String> {
    let name = args
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| args.strip_prefix('<').and_then(|r| r.strip_suffix('>')));
    let Some(name) = name else {
        return Some(format!(
            "`#include {args}` is not a header named in quotes or angle brackets (a computed include is not allowed)"
        ));
    };
    let parts_ok = name.split('/').all(|part| {
        !part.is_empty() && part != ".." && part.chars().all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c))
    });
    (!parts_ok).then(|| {
        format!(
            "`#include {args}` names a file outside the include path (an absolute path, `..`, or an unusual character)"
        )
    })
}

/// Refuses `candidate` when it adds a pre-processor line (or identifier) that
/// could read a file outside the include path; the message says which.
pub fn check_candidate(original: &str, candidate: &str) -> Result<(), String> {
    let (before, after) = (scan(original), scan(candidate));
    if after.trigraphs > before.trigraphs {
        return Err("the candidate uses a trigraph (`??=` or `??/`); write `#` and `\\`".to_owned());
    }
    for (ident, n) in &after.identifiers {
        if *n > before.identifiers.get(ident).copied().unwrap_or(0) {
            return Err(format!(
                "the candidate uses `{ident}`, which a kernel rewrite must not add (it reaches files or pragmas)"
            ));
        }
    }
    let mut new: Vec<&(String, String)> = after
        .directives
        .iter()
        .filter(|(d, n)| **n > before.directives.get(*d).copied().unwrap_or(0))
        .map(|(d, _)| d)
        .collect();
    new.sort();
    for (name, args) in new {
        let problem = match name.as_str() {
            "include" => include_problem(args),
            "pragma" => {
                let word = args.split_whitespace().next().unwrap_or("");
                (!["unroll", "nounroll", "once"].contains(&word))
                    .then(|| format!("`#pragma {args}`: a candidate may add only `#pragma unroll`"))
            }
            n if PLAIN_DIRECTIVES.contains(&n) => None,
            n => Some(format!("`#{n}` is not a directive a kernel rewrite may add")),
        };
        if let Some(problem) = problem {
            return Err(format!("the candidate was not compiled: {problem}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGINAL: &str =
        "#include <cstdio>\n#include \"../common/util.h\"\n__global__ void k(float* y) { y[0] = 1.0f; }\n";

    /// The original with `added` above its kernel: accepted, or refused with a message holding `word`.
    fn check(added: &str, expected: Option<&str>) {
        let candidate = ORIGINAL.replace("__global__", &format!("{added}\n__global__"));
        match (check_candidate(ORIGINAL, &candidate), expected) {
            (Ok(()), None) => {}
            (Err(e), Some(word)) => assert!(e.contains(word), "{added:?}: {e}"),
            (got, want) => panic!("{added:?}: got {got:?}, wanted {want:?}"),
        }
    }

    #[test]
    fn candidates_may_add_plain_headers_and_directives() {
        check("#include <cuda_fp16.h>", None);
        check("#include \"cute/tensor.hpp\"", None);
        check("#include <cooperative_groups/reduce.h>", None);
        check("#define TILE 32\n#if TILE > 16\n#endif\n#undef TILE", None);
        check("#pragma unroll 4", None);
        check("// #include \"/etc/passwd\"", None);
        check("/* #include \"/etc/passwd\" */", None);
        check("const char* s = \"#include </etc/passwd>\";", None);
        check("const char* s = \"/*\"; int x; // */", None);
        check("char c = '\"'; int n = 1'000'000; char q = L'x';", None);
        // The original's own `#include "../common/util.h"` stays (once).
        check("int unrelated;", None);
    }

    #[test]
    fn candidates_may_not_reach_other_files() {
        check("#include \"/etc/passwd\"", Some("/etc/passwd"));
        check("#include </home/u/.ssh/id_rsa>", Some("absolute"));
        check("#include \"../../secret.h\"", Some("`..`"));
        check("#include \"cute/../../../etc/passwd\"", Some("`..`"));
        check("#define F \"/etc/passwd\"\n#include F", Some("computed include"));
        check("#  include  \"/etc/passwd\"", Some("/etc/passwd"));
        check("#inc\\\nlude \"/etc/passwd\"", Some("/etc/passwd"));
        check("/* a\n */ #include \"/etc/passwd\"", Some("/etc/passwd"));
        check("# /* x */ include \"/etc/passwd\"", Some("/etc/passwd"));
        check("%:include \"/etc/passwd\"", Some("/etc/passwd"));
        check("??=include \"/etc/passwd\"", Some("trigraph"));
        check("#include_next <cstdio>", Some("#include_next"));
        check("#embed \"/etc/passwd\"", Some("#embed"));
        check("#line 1 \"/etc/passwd\"", Some("#line"));
        check("#pragma GCC dependency \"/etc/passwd\"", Some("pragma"));
        check("_Pragma(\"GCC dependency \\\"/etc/passwd\\\"\")", Some("_Pragma"));
        check("#if __has_include(\"/etc/passwd\")\n#endif", Some("__has_include"));
        check("#define H __has_include\n", Some("__has_include"));
        check("int a = 0xFF'FF; _Pragma(\"GCC dependency \\\"/etc/passwd\\\"\")", Some("_Pragma"));
        check("int a = 1'000; /*'*/ _Pragma(\"x\")", Some("_Pragma"));
    }
}
