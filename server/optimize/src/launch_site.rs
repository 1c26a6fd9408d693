//! An offered edit that changes the kernel's launch also updates the file's
//! own launch sites (`kernel<<<grid, block[, smem[, stream]]>>>(args)`), so
//! the host code runs the kernel the way it was measured. The new launch is
//! written in the host's terms: the spec's `tune` names become the values the
//! search picked, and a spec name becomes the call's argument for the kernel
//! parameter it is bound to (`rows = N` makes `N` the `rows` argument). A site
//! whose launch cannot be written so (a name bound to no parameter, a launch
//! inside the kernel's own region) is left alone, and a note says exactly
//! what it must become. Nothing is guessed: a `let` with a literal value is
//! the spec's problem size, not the host's.

use crate::region::LineEdit;
use kernelpro_spec::{LAUNCH_PARTS, Scope, launch_part};
use std::collections::HashMap;

/// The site edits (outside the kernel's region) and what the user must know.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteUpdate {
    pub edits: Vec<LineEdit>,
    pub notes: Vec<String>,
}

/// How many `ceil_div`/`min`/`max` calls one launch expression may hold
/// (spec expressions nest at most 64 deep; this bounds the rewriting loop).
const MAX_CALLS: usize = 64;

/// The launch-site edits that make `original`'s in-file launches of `kernel`
/// follow `candidate`'s spec; nothing when the effective launch is the same.
/// `resolved` is the candidate's launch for the spec's own sizes, in words
/// (`<<<dim3(1024, 1, 1), dim3(256, 1, 1), 0>>>`), for the note on a site it
/// cannot write.
pub fn update_sites(
    original: &str,
    candidate: &str,
    kernel: &str,
    region: (u32, u32),
    resolved: Option<&str>,
) -> SiteUpdate {
    let (before, after) = (Spec::of(original, kernel), Spec::of(candidate, kernel));
    let changed: Vec<usize> = (0..LAUNCH_PARTS.len()).filter(|&i| before.effective(i) != after.effective(i)).collect();
    let mut update = SiteUpdate::default();
    if changed.is_empty() {
        return update;
    }
    let Some(tree) = kernelpro_source::parse_tree(original) else { return update };
    let params = kernelpro_source::parse(original)
        .kernel(kernel)
        .map(|k| k.params.iter().map(|p| (p.name.clone(), p.pointer)).collect::<Vec<_>>())
        .unwrap_or_default();
    let wanted: Vec<String> = changed
        .iter()
        .map(|&i| format!("`{} = {}`", LAUNCH_PARTS[i], after.parts[i].as_deref().unwrap_or("0")))
        .collect();
    for site in sites(&tree, original, kernel) {
        let line = site.line + 1;
        let old = &original[site.config_bytes.0..site.config_bytes.1];
        if site.line <= region.1 && site.end_line >= region.0 {
            update.notes.push(format!("The launch of `{kernel}` on line {line} lies inside the rewritten kernel and is left as `<<<{old}>>>`: it must use {}.", wanted.join(", ")));
            continue;
        }
        let host = HostNames::new(&after, &params, &site.args);
        let mut new_args = site.config.clone();
        let mut missing = Vec::new();
        for &i in &changed {
            let value = match after.parts[i].as_deref() {
                Some(expr) => host.write(expr, i == 0 || i == 1),
                None => Ok("0".to_string()), // the spec dropped `smem`: none
            };
            match value {
                Ok(v) if i < new_args.len() => new_args[i] = v,
                Ok(v) if i == new_args.len() => new_args.push(v),
                Ok(_) => missing.push(format!(
                    "a `{}` argument (the call has {} launch arguments)",
                    LAUNCH_PARTS[i],
                    site.config.len()
                )),
                Err(names) => missing.extend(names),
            }
        }
        if !missing.is_empty() {
            let mut seen = std::collections::HashSet::new();
            missing.retain(|m| seen.insert(m.clone()));
            update.notes.push(format!(
                "The launch of `{kernel}` on line {line} (`<<<{old}>>>`) is left as it is: the new launch ({}) uses {}, which this call's arguments do not give (the spec binds no kernel parameter to it). Write the launch there in the host's values of those names{}.",
                wanted.join(", "),
                missing.join(", "),
                resolved.map(|r| format!(" (with the spec's own sizes it is `{r}`)")).unwrap_or_default()
            ));
            continue;
        }
        let new_config = new_args.join(", ");
        let start_line_byte = original[..site.config_bytes.0].rfind('\n').map_or(0, |i| i + 1);
        let end_line_byte =
            original[site.config_bytes.1..].find('\n').map_or(original.len(), |i| site.config_bytes.1 + i + 1);
        let text = format!(
            "{}{new_config}{}",
            &original[start_line_byte..site.config_bytes.0],
            &original[site.config_bytes.1..end_line_byte]
        );
        update.edits.push(LineEdit { start_line: site.line, end_line: site.end_line + 1, text });
        update.notes.push(format!("The edit also changes the launch of `{kernel}` on line {line} from `<<<{old}>>>` to `<<<{new_config}>>>` (the spec's {} in this call's arguments).", wanted.join(", ")));
    }
    update
}

/// What one side's spec says about the launch: its `grid`, `block`, `smem`
/// expressions, the value each `tune` name takes (its first), and which
/// kernel parameter each spec name is bound to.
struct Spec {
    parts: [Option<String>; 3],
    tunes: HashMap<String, String>,
    /// Spec name → kernel parameter (`rows = N`: `N` → `rows`).
    bound_to: HashMap<String, String>,
}

impl Spec {
    fn of(text: &str, kernel: &str) -> Spec {
        let specs = kernelpro_spec::parse_file(text);
        let mut spec = Spec { parts: [None, None, None], tunes: HashMap::new(), bound_to: HashMap::new() };
        let lines = specs.kernel(kernel).map(|k| k.lines.as_slice()).unwrap_or(&[]).iter().chain(&specs.file_lets);
        for line in lines {
            let t = line.text.trim();
            if let Some(part) = launch_part(t) {
                let i = LAUNCH_PARTS.iter().position(|p| *p == part).expect("a launch part");
                spec.parts[i] = t.split_once('=').map(|(_, rhs)| rhs.trim().to_string());
            } else if let Some(rest) = t.strip_prefix("tune ") {
                if let Some((name, list)) = rest.split_once(" in ") {
                    let first = list.trim().trim_start_matches('[').split([',', ']']).next().unwrap_or("").trim();
                    spec.tunes.insert(name.trim().to_string(), first.to_string());
                }
            } else if let Some((lhs, rhs)) = t.split_once('=')
                && !t.starts_with("let ")
                && is_name(lhs.trim())
                && is_name(rhs.trim())
            {
                spec.bound_to.insert(rhs.trim().to_string(), lhs.trim().to_string());
            }
        }
        spec
    }

    /// Part `i` with the tune names replaced by their values: two sides launch
    /// alike when these are equal.
    fn effective(&self, i: usize) -> Option<String> {
        let expr = self.parts[i].as_deref()?;
        Some(
            map_names(expr, |n| Some(self.tunes.get(n).cloned().unwrap_or_else(|| n.to_string())))
                .unwrap_or_default()
                .split_whitespace()
                .collect(),
        )
    }
}

/// One in-file launch of the kernel.
struct Site {
    /// 0-based lines of its launch configuration.
    line: u32,
    end_line: u32,
    /// Bytes from the first launch argument to the end of the last.
    config_bytes: (usize, usize),
    /// The launch arguments' texts (grid, block, smem, stream).
    config: Vec<String>,
    /// The kernel arguments' texts.
    args: Vec<String>,
}

fn sites(tree: &tree_sitter::Tree, text: &str, kernel: &str) -> Vec<Site> {
    let part = |p: &kernelpro_source::launch::Part| text[p.bytes.clone()].to_string();
    kernelpro_source::launch::sites(tree, text)
        .into_iter()
        .filter(|s| s.kernel == kernel)
        .filter_map(|s| {
            let (first, last) = (s.config.first()?, s.config.last()?);
            Some(Site {
                line: first.span.start.line,
                end_line: last.span.end.line,
                config_bytes: (first.bytes.start, last.bytes.end),
                config: s.config.iter().map(part).collect(),
                args: s.args.iter().map(part).collect(),
            })
        })
        .collect()
}

/// The spec's names in the terms of one call: tune values and the call's arguments.
struct HostNames<'a> {
    spec: &'a Spec,
    /// Scalar kernel parameter → the call's argument for it.
    args: HashMap<&'a str, &'a str>,
}

impl<'a> HostNames<'a> {
    fn new(spec: &'a Spec, params: &'a [(String, bool)], args: &'a [String]) -> Self {
        let args = if params.len() == args.len() {
            params
                .iter()
                .zip(args)
                .filter(|((_, pointer), _)| !pointer)
                .map(|((p, _), a)| (p.as_str(), a.as_str()))
                .collect()
        } else {
            HashMap::new() // a default argument or a macro: positions are unknown
        };
        HostNames { spec, args }
    }

    fn name(&self, n: &str) -> Option<String> {
        if let Some(v) = self.spec.tunes.get(n) {
            return Some(v.clone());
        }
        let param = self.spec.bound_to.get(n).map(String::as_str).unwrap_or(n);
        let arg = self.args.get(param)?.trim();
        Some(if is_name(arg) || arg.chars().all(|c| c.is_ascii_alphanumeric()) {
            arg.to_string()
        } else {
            format!("({arg})")
        })
    }

    /// `expr` in host C++ (a `(x, y)` grid or block as `dim3(x, y)`), or what
    /// it needs that this call cannot give (the names, quoted).
    fn write(&self, expr: &str, dims: bool) -> Result<String, Vec<String>> {
        if dims && let Some(parts) = tuple_parts(expr) {
            let written: Vec<Result<String, Vec<String>>> = parts.iter().map(|p| self.write(p, false)).collect();
            let missing: Vec<String> = written.iter().filter_map(|w| w.clone().err()).flatten().collect();
            if !missing.is_empty() {
                return Err(missing);
            }
            return Ok(format!(
                "dim3({})",
                written.into_iter().map(|w| w.expect("no missing names")).collect::<Vec<_>>().join(", ")
            ));
        }
        let mut missing = Vec::new();
        let substituted = map_names(expr, |n| {
            let got = self.name(n);
            if got.is_none() {
                missing.push(format!("`{n}`"));
            }
            got
        });
        match substituted {
            Some(s) if missing.is_empty() => expand_calls(&s)
                .map(|e| fold(&e))
                .ok_or_else(|| vec!["`ceil_div`/`min`/`max` calls it cannot rewrite".to_string()]),
            _ => Err(missing),
        }
    }
}

fn is_name(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// `expr` with every name that is not a call (`ceil_div(`) replaced by `f(name)`;
/// `None` when `f` knows a name not.
fn map_names(expr: &str, mut f: impl FnMut(&str) -> Option<String>) -> Option<String> {
    let mut out = String::new();
    let mut ok = true;
    let mut chars = expr.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_alphabetic() || c == '_' {
            let mut end = at + c.len_utf8();
            while let Some(&(e, d)) = chars.peek() {
                if !(d.is_alphanumeric() || d == '_') {
                    break;
                }
                end = e + d.len_utf8();
                chars.next();
            }
            let name = &expr[at..end];
            if expr[end..].trim_start().starts_with('(') {
                out.push_str(name);
            } else {
                match f(name) {
                    Some(v) => out.push_str(&v),
                    None => ok = false,
                }
            }
        } else if c.is_ascii_digit() {
            // A number's suffix letters (`0x1F`, `1e3`) are part of it, not names.
            let mut end = at + 1;
            while let Some(&(e, d)) = chars.peek() {
                if !(d.is_alphanumeric() || d == '_') {
                    break;
                }
                end = e + d.len_utf8();
                chars.next();
            }
            out.push_str(&expr[at..end]);
        } else {
            out.push(c);
        }
    }
    ok.then_some(out)
}

/// The spec's `ceil_div`, `min` and `max` as plain C++, innermost first (the
/// last call in the text has no call in its arguments), with constant
/// arguments folded by the spec's own evaluator.
fn expand_calls(expr: &str) -> Option<String> {
    let mut s = expr.to_string();
    for _ in 0..MAX_CALLS {
        let call = ["ceil_div(", "min(", "max("]
            .iter()
            .filter_map(|f| {
                s.match_indices(f)
                    .filter(|(i, _)| !s[..*i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
                    .map(|(i, _)| (i, f.len() - 1))
                    .last()
            })
            .max();
        let Some((at, name_len)) = call else { return Some(s) };
        let open = at + name_len;
        let close = matching_paren(&s, open)?;
        let args = split_top(&s[open + 1..close]);
        let [a, b] = args.as_slice() else { return None };
        let (a, b) = (fold(a), fold(b));
        let replacement = match &s[at..open] {
            "ceil_div" => match b.parse::<i64>() {
                Ok(n) if n > 1 => format!("({} + {}) / {n}", a, n - 1),
                Ok(1) => a.clone(),
                _ => format!("({} + {} - 1) / {}", a, paren(&b), paren(&b)),
            },
            "min" => format!("({} < {} ? {} : {})", paren(&a), paren(&b), paren(&a), paren(&b)),
            _ => format!("({} > {} ? {} : {})", paren(&a), paren(&b), paren(&a), paren(&b)),
        };
        s.replace_range(at..=close, &replacement);
    }
    None
}

/// A constant expression's value (`132 * 16` → `2112`), else the text, trimmed.
fn fold(expr: &str) -> String {
    kernelpro_spec::eval(expr.trim(), &Scope::default())
        .map(|v| v.to_string())
        .unwrap_or_else(|_| expr.trim().to_string())
}

fn paren(s: &str) -> String {
    if is_name(s) || s.parse::<i64>().is_ok() || (s.starts_with('(') && matching_paren(s, 0) == Some(s.len() - 1)) {
        s.to_string()
    } else {
        format!("({s})")
    }
}

fn matching_paren(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `a, b` split at its top-level commas, each part trimmed (the spec parser's splitter).
fn split_top(s: &str) -> Vec<String> {
    kernelpro_spec::split_top_level(s).into_iter().map(|(_, p)| p.trim().to_string()).collect()
}

/// `(x, y[, z])` as its parts; `None` for anything else.
fn tuple_parts(expr: &str) -> Option<Vec<String>> {
    let e = expr.trim();
    (e.starts_with('(') && matching_paren(e, 0) == Some(e.len() - 1))
        .then(|| split_top(&e[1..e.len() - 1]))
        .filter(|p| p.len() >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "// kernelpro: let N = 8192\n// kernelpro: tune B in [128, 256]\n// kernelpro: grid = ceil_div(N, B)\n// kernelpro: block = B\n// kernelpro: y = out float[N]\n// kernelpro: rows = N\n";
    const KERNEL: &str = "__global__ void k(float* y, int rows) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < rows) y[i] = 1.0f;\n}\n";

    /// `update_sites` on a file whose host code is `host`, with the spec
    /// lines `from` replaced by `to` in the candidate: the edited host text
    /// (or `-`) and the notes.
    fn check(host: &str, from: &str, to: &str, expected: expect_test::Expect) {
        let original = format!("{SPEC}{KERNEL}{host}");
        let candidate = original.replacen(from, to, 1);
        let region = (0, (SPEC.lines().count() + KERNEL.lines().count() - 1) as u32);
        let u = update_sites(&original, &candidate, "k", region, Some("<<<8, 128, 0>>>"));
        let mut lines: Vec<String> = original.split_inclusive('\n').map(str::to_string).collect();
        for e in u.edits.iter().rev() {
            lines.splice(e.start_line as usize..e.end_line as usize, [e.text.clone()]);
        }
        let edited = if u.edits.is_empty() {
            "-".to_string()
        } else {
            lines.concat().split_at(original.len() - host.len()).1.to_string()
        };
        expected.assert_eq(&format!("{edited}\n{}", u.notes.join("\n")));
    }

    #[test]
    fn a_changed_launch_is_written_in_the_calls_arguments() {
        let host = "void run(float* d, int n, cudaStream_t s) {\n  k<<<(n + 127) / 128, 128, 0, s>>>(d, n);\n}\n";
        check(
            host,
            "grid = ceil_div(N, B)",
            "grid = min(ceil_div(N, 8), 132 * 16)",
            expect_test::expect![[r#"
                void run(float* d, int n, cudaStream_t s) {
                  k<<<(((n + 7) / 8) < 2112 ? ((n + 7) / 8) : 2112), 128, 0, s>>>(d, n);
                }

                The edit also changes the launch of `k` on line 12 from `<<<(n + 127) / 128, 128, 0, s>>>` to `<<<(((n + 7) / 8) < 2112 ? ((n + 7) / 8) : 2112), 128, 0, s>>>` (the spec's `grid = min(ceil_div(N, 8), 132 * 16)` in this call's arguments)."#]],
        );
        // A tune reorder changes the launch too: the grid and the block follow B.
        check(
            host,
            "[128, 256]",
            "[256, 128]",
            expect_test::expect![[r#"
                void run(float* d, int n, cudaStream_t s) {
                  k<<<(n + 255) / 256, 256, 0, s>>>(d, n);
                }

                The edit also changes the launch of `k` on line 12 from `<<<(n + 127) / 128, 128, 0, s>>>` to `<<<(n + 255) / 256, 256, 0, s>>>` (the spec's `grid = ceil_div(N, B)`, `block = B` in this call's arguments)."#]],
        );
    }

    #[test]
    fn new_dynamic_shared_memory_and_2d_blocks() {
        let host = "void run(float* d, int rows) {\n  dim3 g((rows + 255) / 256);\n  k<<<g, 256>>>(d, rows * 1);\n}\n";
        check(
            host,
            "grid = ceil_div(N, B)\n// kernelpro: block = B\n",
            "grid = (ceil_div(N, 32), 4)\n// kernelpro: block = (32, 8)\n// kernelpro: smem = 4 * B\n",
            expect_test::expect![[r#"
                void run(float* d, int rows) {
                  dim3 g((rows + 255) / 256);
                  k<<<dim3(((rows * 1) + 31) / 32, 4), dim3(32, 8), 512>>>(d, rows * 1);
                }

                The edit also changes the launch of `k` on line 13 from `<<<g, 256>>>` to `<<<dim3(((rows * 1) + 31) / 32, 4), dim3(32, 8), 512>>>` (the spec's `grid = (ceil_div(N, 32), 4)`, `block = (32, 8)`, `smem = 4 * B` in this call's arguments)."#]],
        );
    }

    #[test]
    fn a_launch_the_call_cannot_express_is_left_with_a_note() {
        // `M` is bound to no parameter: only the spec knows it.
        let host = "void run(float* d, int n) {\n  k<<<n / 128, 128>>>(d, n);\n}\n";
        check(
            host,
            "grid = ceil_div(N, B)",
            "grid = ceil_div(M, 8)\n// kernelpro: let M = 64",
            expect_test::expect![[r#"
                -
                The launch of `k` on line 12 (`<<<n / 128, 128>>>`) is left as it is: the new launch (`grid = ceil_div(M, 8)`) uses `M`, which this call's arguments do not give (the spec binds no kernel parameter to it). Write the launch there in the host's values of those names (with the spec's own sizes it is `<<<8, 128, 0>>>`)."#]],
        );
        // No change of the effective launch: nothing to do.
        check(
            host,
            "y = out",
            "y =  out",
            expect_test::expect![[r#"
            -
        "#]],
        );
    }
}
