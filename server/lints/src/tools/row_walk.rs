//! A thread that walks a long row alone: a loop whose counter runs along the
//! contiguous dimension (coefficient 1 in the index) while the thread index
//! picks the row (neighbouring lanes whole rows apart). The class a warp- or
//! block-per-row rewrite answers (norms, softmax, row sums, gathers that walk
//! channels). Reported once per loop, on its header.

use super::finding;
use super::uncoalesced::uncoalesced;
use crate::model::{Lines, lane_step, models, stride};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_source::kernel_model::{AccessKind, Atom, Step};

pub struct RowWalk;

const NAME: Code = Code::RowWalk;

/// A loop with a constant bound this short is a vector's width, not a row.
const SHORT_ROW: i64 = 32;

impl StaticTool for RowWalk {
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut lines = Lines::default();
        for model in models(input).iter() {
            let bad = uncoalesced(&model);
            let fixed = template_values(input, &model.name);
            for (id, l) in model.loops.iter().enumerate() {
                let Some(atom) = &l.atom else { continue };
                if !matches!(&l.step, Step::Add(s) if s.as_constant() == Some(1))
                    || l.bound.as_ref().and_then(|b| b.as_constant()).is_some_and(|b| b.abs() <= SHORT_ROW)
                {
                    continue;
                }
                // A bound made of template values (`resIdxN < TN`) is a register
                // tile's width fixed at compile time, not a row whose length is
                // known to be long: whether it is, the model cannot tell.
                if l.bound.as_ref().is_some_and(|b| {
                    b.atoms().next().is_some() && b.atoms().all(|a| matches!(a, Atom::Sym(s) if fixed.contains(s)))
                }) {
                    continue;
                }
                // Uncoalesced accesses stepping by one element per iteration of this loop.
                let walked: Vec<_> = bad
                    .iter()
                    .filter(|u| {
                        u.access.loops.contains(&id) && u.access.index.coefficient(atom).as_constant() == Some(1)
                    })
                    .collect();
                let Some(first) = walked.first() else {
                    continue;
                };
                if !lines.first(&model.name, l.span.start.line) {
                    continue;
                }
                let var = l.var.as_deref().unwrap_or("?");
                let bound = l.bound.as_ref().map(|b| format!("`{b}`")).unwrap_or_else(|| "many".into());
                let mut arrays: Vec<String> = walked.iter().map(|u| format!("`{}`", u.access.base)).collect();
                arrays.dedup();
                let reduces = walked.iter().any(|u| u.access.accumulated)
                    || model.accesses.iter().any(|a| a.loops.contains(&id) && a.accumulated);
                let writes = walked.iter().any(|u| u.access.kind != AccessKind::Read);
                let a = first.access;
                let message = format!(
                    "each thread walks a row of {} alone along `{var}` ({bound} elements, one per iteration) while neighbouring lanes are {} apart: a warp reads 32 rows at once, {}",
                    arrays.join(", "),
                    stride(&lane_step(a), &a.elem),
                    first.sectors_text()
                );
                let fix = if reduces {
                    format!(
                        "Give each row a warp (a block when rows are long): lanes stride the row together (`for (int {var} = lane; {var} < …; {var} += 32)`), reduce the partial results with `__shfl_xor_sync` (and shared memory across warps), and keep the per-element expression as it is."
                    )
                } else if writes {
                    format!(
                        "Put the threads across the row instead of along it: one thread per element (or per 4 elements with 128-bit loads), threadIdx.x on `{var}`, so consecutive lanes touch consecutive elements."
                    )
                } else {
                    format!(
                        "Let the lanes of a warp walk the row together (`{var} = lane; {var} += 32`) so each request reads consecutive elements."
                    )
                };
                findings.push(
                    finding(NAME, Severity::Warning, l.span, &model.name, message)
                        .with_evidence("loop", format!("{var}: bound {bound}"))
                        .with_evidence(
                            "walked accesses",
                            walked.iter().map(|u| u.access.text.clone()).collect::<Vec<_>>().join(", "),
                        )
                        .with_evidence("lane stride (elements)", lane_step(a).to_string())
                        .with_guidance(fix),
                );
            }
        }
        findings
    }
}

/// The names of a template kernel's non-type parameters (`template <int BM, const int TN>`
/// gives `BM`, `TN`; `typename T` gives nothing).
fn template_values(input: &LintInput, kernel: &str) -> Vec<String> {
    let Some(f) = input.source.functions.iter().find(|f| f.name == kernel && f.is_template) else {
        return Vec::new();
    };
    let Some(text) = input.text.get(f.start_byte..f.end_byte) else {
        return Vec::new();
    };
    let Some(open) = text.find('<') else {
        return Vec::new();
    };
    // The header's closing `>`, past nested ones (`template <typename T = A<B>>`).
    let mut level = 0usize;
    let mut close = None;
    for (i, c) in text[open..].char_indices() {
        match c {
            '<' => level += 1,
            '>' => {
                level -= 1;
                if level == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(close) = close else {
        return Vec::new();
    };
    text[open + 1..close]
        .split(',')
        .map(|p| p.split('=').next().unwrap_or("").trim())
        .filter(|p| !p.starts_with("typename") && !p.starts_with("class") && !p.starts_with("template"))
        .filter_map(|p| p.rsplit(|c: char| !(c.is_alphanumeric() || c == '_')).next())
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect()
}
