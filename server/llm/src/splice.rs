//! Where kernel K sits in a file, and putting a rewritten K back (the
//! optimizer contract): helpers go directly above K's spec block, the spec
//! block stays except for the order of `tune` values, and nothing else in the
//! file changes.

use crate::error::LlmError;
use crate::items::{Item, ItemKind, items};

/// Kernel K in a source file.
#[derive(Debug)]
pub struct KernelSite<'a> {
    source: &'a str,
    /// Start of the `__device__` helpers directly above the spec block (or of
    /// the spec block, or of the kernel): the start of the editable region.
    pub region_start: usize,
    /// Start of the comment lines directly above K: new helpers go here.
    insert_at: usize,
    /// Start of the first `// kernelpro:` line of K's block (`kernel_start` if none).
    pub spec_start: usize,
    /// Start of the line where K's declaration begins.
    pub kernel_start: usize,
    /// Just past K's closing brace.
    pub kernel_end: usize,
    /// The helpers in the region, by name.
    helpers: Vec<(String, std::ops::Range<usize>)>,
    items: Vec<Item>,
}

impl<'a> KernelSite<'a> {
    pub fn find(source: &'a str, kernel: &str) -> Result<KernelSite<'a>, LlmError> {
        let items = items(source).map_err(|e| LlmError::BadKernel(format!("cannot scan the source: {e}")))?;
        let at = items
            .iter()
            .position(|it| it.is_global() && it.function_name() == Some(kernel))
            .ok_or_else(|| LlmError::BadKernel(format!("no kernel `{kernel}` in the source")))?;
        let kernel_start = line_start(source, items[at].start);
        let (insert_at, spec_start) = comments_above(source, kernel_start);
        let mut region_start = insert_at;
        let mut helpers = Vec::new();
        for item in items[..at].iter().rev() {
            let gap = &source[item.end..region_start];
            if !item.is_device_helper() || !only_comments(gap) {
                break;
            }
            region_start = line_start(source, item.start);
            helpers.push((item.function_name().unwrap_or_default().to_owned(), region_start..item.end));
        }
        helpers.reverse();
        Ok(KernelSite {
            source,
            region_start,
            insert_at,
            spec_start,
            kernel_start,
            kernel_end: items[at].end,
            helpers,
            items,
        })
    }

    /// Helpers, spec block and kernel: what the model is shown and rewrites.
    pub fn region(&self) -> &'a str {
        &self.source[self.region_start..self.kernel_end]
    }

    /// K's `// kernelpro:` block (may include plain comments between its lines).
    pub fn spec_block(&self) -> &'a str {
        &self.source[self.spec_start..self.kernel_start]
    }

    fn kernel_text(&self) -> &'a str {
        &self.source[self.kernel_start..self.kernel_end]
    }

    /// The source with K replaced by the kernel in `code` (a reply's code block).
    pub fn splice(&self, kernel: &str, code: &str) -> Result<String, LlmError> {
        let bad = |m: String| LlmError::BadKernel(m);
        let reply = items(code).map_err(|e| bad(format!("the code block is cut off or unbalanced: {e}")))?;
        let globals: Vec<&Item> = reply.iter().filter(|it| it.is_global()).collect();
        let new_kernel = match globals.as_slice() {
            [] => return Err(bad("the code block holds no `__global__` kernel".to_owned())),
            [one] => *one,
            many => {
                let names: Vec<&str> = many.iter().filter_map(|it| it.function_name()).collect();
                return Err(bad(format!(
                    "the code block holds {} kernels ({}); exactly one is allowed",
                    many.len(),
                    names.join(", ")
                )));
            }
        };
        let name = new_kernel.function_name().unwrap_or_default();
        if name != kernel {
            return Err(bad(format!("the kernel was renamed to `{name}`; it must stay `{kernel}`")));
        }
        let new_kernel_text = &code[line_start(code, new_kernel.start)..new_kernel.end];
        check_parameters(self.kernel_text(), new_kernel_text, kernel)?;

        let mut includes = Vec::new();
        let mut added = Vec::new();
        let mut replaced: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for item in reply.iter().take_while(|it| it.start < new_kernel.start) {
            let text = code[item.start..item.end].trim();
            match &item.kind {
                ItemKind::Preprocessor if text.starts_with("#include") => {
                    if !self.source.lines().any(|l| l.trim() == text) {
                        includes.push(text.to_owned());
                    }
                }
                ItemKind::Function { name, device: true, .. } => {
                    let text = code[line_start(code, item.start)..item.end].to_owned();
                    if let Some((_, range)) = self.helpers.iter().find(|(n, _)| n == name) {
                        replaced.push((range.clone(), text));
                    } else if self.defines_elsewhere(name) {
                        return Err(bad(format!(
                            "helper `{name}` is already defined elsewhere in the file; give it another name"
                        )));
                    } else {
                        added.push(text);
                    }
                }
                ItemKind::Function { .. } => {} // host code is not the candidate's to change
                ItemKind::Preprocessor | ItemKind::Other => {
                    if !self.source.contains(text) {
                        added.push(text.to_owned());
                    }
                }
            }
        }

        // Existing helpers, with the ones the reply rewrote replaced in place.
        let mut out = self.source[..self.region_start].to_owned();
        let mut at = self.region_start;
        for (range, text) in &replaced {
            out.push_str(&self.source[at..range.start]);
            out.push_str(text);
            at = range.end;
        }
        out.push_str(&self.source[at..self.insert_at]);
        // New includes and helpers, directly above the kernel's comments.
        for include in &includes {
            out.push_str(include);
            out.push('\n');
        }
        for text in &added {
            out.push_str(text.trim_end());
            out.push_str("\n\n");
        }
        out.push_str(&self.source[self.insert_at..self.spec_start]);
        out.push_str(&reorder_tunes(self.spec_block(), code));
        out.push_str(new_kernel_text);
        out.push_str(&self.source[self.kernel_end..]);
        Ok(out)
    }

    /// A function of this name outside the helper run (another kernel, a host function, a helper elsewhere).
    fn defines_elsewhere(&self, name: &str) -> bool {
        self.items
            .iter()
            .any(|it| it.function_name() == Some(name) && (it.start < self.region_start || it.start >= self.kernel_end))
    }
}

/// The spec block with each `tune NAME in [...]` list in the order the reply
/// gives it, when the reply's list holds the same values.
fn reorder_tunes(spec: &str, code: &str) -> String {
    let reply_tunes: Vec<(&str, Vec<&str>)> = code.lines().filter_map(tune_line).collect();
    let mut out = String::with_capacity(spec.len());
    for line in spec.split_inclusive('\n') {
        let replaced = tune_line(line).and_then(|(name, values)| {
            let (_, wanted) = reply_tunes.iter().find(|(n, _)| *n == name)?;
            let (mut a, mut b) = (values.clone(), wanted.clone());
            a.sort_unstable();
            b.sort_unstable();
            (a == b && *wanted != values).then(|| {
                let open = line.find('[').unwrap_or(line.len());
                let close = line.rfind(']').unwrap_or(line.len());
                format!("{}[{}]{}", &line[..open], wanted.join(", "), &line[close + 1..])
            })
        });
        out.push_str(replaced.as_deref().unwrap_or(line));
    }
    out
}

/// `// kernelpro: tune NAME in [a, b]` → (`NAME`, [`a`, `b`]).
fn tune_line(line: &str) -> Option<(&str, Vec<&str>)> {
    let rest =
        line.trim().strip_prefix("//")?.trim_start().strip_prefix("kernelpro:")?.trim_start().strip_prefix("tune")?;
    let (name, list) = rest.split_once(" in ")?;
    let list = list.trim().strip_prefix('[')?.strip_suffix(']')?;
    Some((name.trim(), list.split(',').map(str::trim).filter(|v| !v.is_empty()).collect()))
}

/// The parameter list may gain `const` and `__restrict__`, nothing else.
fn check_parameters(old: &str, new: &str, kernel: &str) -> Result<(), LlmError> {
    let (a, b) = (parameters(old, kernel), parameters(new, kernel));
    if a == b {
        Ok(())
    } else {
        Err(LlmError::BadKernel(format!(
            "the parameter list changed from ({}) to ({}); only `const` and `__restrict__` may be added",
            a.join(", "),
            b.join(", ")
        )))
    }
}

/// Each parameter with qualifiers and spaces removed.
fn parameters(kernel_text: &str, name: &str) -> Vec<String> {
    let Some(open) = kernel_text
        .match_indices(name)
        .map(|(i, _)| i + name.len())
        .find(|&i| kernel_text[i..].trim_start().starts_with('('))
    else {
        return Vec::new();
    };
    let open = open + kernel_text[open..].find('(').unwrap_or(0) + 1;
    let mut depth = 0i32;
    let mut params = vec![String::new()];
    for c in kernel_text[open..].chars() {
        match c {
            '(' | '<' => depth += 1,
            ')' if depth == 0 => break,
            ')' | '>' => depth -= 1,
            ',' if depth == 0 => {
                params.push(String::new());
                continue;
            }
            _ => {}
        }
        params.last_mut().unwrap().push(c);
    }
    params
        .iter()
        .map(|p| {
            p.split(|c: char| c.is_whitespace() || c == '*' || c == '&')
                .filter(|w| !matches!(*w, "" | "const" | "__restrict__" | "__restrict" | "restrict"))
                .collect::<Vec<_>>()
                .join(" ")
                + &"*".repeat(p.matches('*').count())
        })
        .filter(|p| !p.is_empty())
        .collect()
}

fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The start of the comment run directly above `kernel_start`, and of its
/// first `// kernelpro:` line (`kernel_start` when it has none).
fn comments_above(source: &str, kernel_start: usize) -> (usize, usize) {
    let mut start = kernel_start;
    let mut spec = kernel_start;
    while start > 0 {
        let prev = line_start(source, start - 1);
        let line = source[prev..start].trim();
        if !line.starts_with("//") {
            break;
        }
        start = prev;
        if line.trim_start_matches('/').trim_start().starts_with("kernelpro:") {
            spec = prev;
        }
    }
    (start, spec)
}

fn only_comments(text: &str) -> bool {
    items(text).is_ok_and(|it| it.is_empty())
}
