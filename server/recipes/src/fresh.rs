//! Fresh names for generated code. Every recipe names what it generates with the `kp_` prefix
//! (`kp_u`, `kp_lane`, `kp_x`); [`with_fresh_names`] keeps those names from meeting the file's
//! own: where the file already has an identifier or a macro of that prefix (`#define kp_lane 3`,
//! or a kernel an earlier rewrite generated), the generated one is renamed `kp_NAME_N` with a
//! counter, and the file's own names come out as they were. [`FreshNames`] is the helper a
//! recipe uses to pick one name directly.

use crate::Rewrite;
use std::collections::HashSet;

/// The prefix of every generated identifier.
pub(crate) const PREFIX: &str = "kp_";

/// Each identifier-like token of `text` (comments, strings and macro names included: a macro
/// replaces any token that spells its name) with its byte range.
pub(crate) fn tokens(text: &str) -> Vec<(std::ops::Range<usize>, &str)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            if !c.is_ascii_digit() {
                out.push((start..i, &text[start..i]));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Names not yet used by a file: every identifier and macro name it spells is taken.
#[derive(Debug, Clone)]
pub struct FreshNames {
    taken: HashSet<String>,
}

impl FreshNames {
    pub fn new(text: &str) -> FreshNames {
        FreshNames { taken: tokens(text).into_iter().map(|(_, t)| t.to_string()).collect() }
    }

    /// `base` (given with or without the `kp_` prefix) if the file does not use it, else
    /// `kp_BASE_1`, `kp_BASE_2`, ...; the name returned is taken from then on.
    pub fn fresh(&mut self, base: &str) -> String {
        let base = if base.starts_with(PREFIX) { base.to_string() } else { format!("{PREFIX}{base}") };
        let mut name = base.clone();
        let mut n = 0;
        while self.taken.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.taken.insert(name.clone());
        name
    }

    pub fn is_taken(&self, name: &str) -> bool {
        self.taken.contains(name)
    }
}

/// `text` with each token `from` maps renamed.
fn renamed(text: &str, map: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (range, tok) in tokens(text) {
        if let Some(to) = map(tok) {
            out.push_str(&text[at..range.start]);
            out.push_str(&to);
            at = range.end;
        }
    }
    out.push_str(&text[at..]);
    out
}

/// `rewrite`'s rewrites of `text` with generated names that never collide with the file's.
/// A file without `kp_` names (nearly every one) is rewritten as is. Otherwise its own `kp_`
/// names are first spelled with a placeholder prefix the file does not use, the recipe runs,
/// each generated `kp_` name the file also uses gets a fresh one, and the placeholders turn back.
pub(crate) fn with_fresh_names(text: &str, kernel: &str, rewrite: impl Fn(&str) -> Vec<Rewrite>) -> Vec<Rewrite> {
    // The kernel keeps its name (the recipe looks it up by it).
    let own: HashSet<&str> =
        tokens(text).into_iter().map(|(_, t)| t).filter(|t| t.starts_with(PREFIX) && *t != kernel).collect();
    if own.is_empty() {
        return rewrite(text);
    }
    let all: HashSet<&str> = tokens(text).into_iter().map(|(_, t)| t).collect();
    let placeholder = (0..)
        .map(|n| format!("kpown{n}_"))
        .find(|p| !all.iter().any(|t| t.starts_with(p.as_str())))
        .expect("some placeholder prefix is free");
    let hidden = renamed(text, &|t| own.contains(t).then(|| format!("{placeholder}{}", &t[PREFIX.len()..])));
    rewrite(&hidden)
        .into_iter()
        .map(|rw| {
            let mut names = FreshNames::new(text);
            for (_, t) in tokens(&rw.source) {
                names.taken.insert(t.to_string());
            }
            let mut fresh: std::collections::HashMap<String, String> = std::collections::HashMap::new();
            for (_, t) in tokens(&rw.source) {
                if own.contains(t) && !fresh.contains_key(t) {
                    fresh.insert(t.to_string(), names.fresh(t));
                }
            }
            let back = |t: &str| -> Option<String> {
                if let Some(f) = fresh.get(t) {
                    return Some(f.clone());
                }
                t.strip_prefix(placeholder.as_str()).map(|rest| format!("{PREFIX}{rest}"))
            };
            Rewrite { source: renamed(&rw.source, &back), note: renamed(&rw.note, &back) }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_names_skip_identifiers_and_macros() {
        let mut n = FreshNames::new("#define kp_u 3\nint kp_lane, kp_lane_1;\n");
        assert_eq!(n.fresh("kp_u"), "kp_u_1");
        assert_eq!(n.fresh("lane"), "kp_lane_2");
        assert_eq!(n.fresh("kp_x"), "kp_x");
        assert_eq!(n.fresh("kp_x"), "kp_x_1");
    }

    #[test]
    fn generated_names_move_off_the_files_own() {
        let text = "#define kp_u 7\n__global__ void f(float* y) { y[0] = kp_u; }\n";
        let out = with_fresh_names(text, "f", |t| {
            // A recipe that generates `kp_u` and copies the user's statement.
            let body = t.split_once('{').unwrap().1.rsplit_once('}').unwrap().0;
            vec![Rewrite {
                source: t.replace(body, &format!(" for (int kp_u = 0; kp_u < 1; ++kp_u) {{{body}}} ")),
                note: "loop kp_u".into(),
            }]
        });
        assert_eq!(
            out[0].source,
            "#define kp_u 7\n__global__ void f(float* y) { for (int kp_u_1 = 0; kp_u_1 < 1; ++kp_u_1) { y[0] = kp_u; } }\n"
        );
        assert_eq!(out[0].note, "loop kp_u_1");
        // A file without `kp_` names is passed through untouched.
        let plain = "__global__ void f(float* y) { y[0] = 1; }\n";
        assert_eq!(
            with_fresh_names(plain, "f", |t| vec![Rewrite { source: t.into(), note: String::new() }])[0].source,
            plain
        );
    }
}
