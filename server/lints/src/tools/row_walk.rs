//! A thread that walks a long row alone: a loop whose counter runs along the
//! contiguous dimension (coefficient 1 in the index) while the thread index
//! picks the row (neighbouring lanes whole rows apart). The class a warp- or
//! block-per-row rewrite answers (norms, softmax, row sums, gathers that walk
//! channels). Reported once per loop, on its first walked access (whose
//! UncoalescedAccess it replaces), with one fix per kernel.

use super::finding;
use super::uncoalesced::{Uncoalesced, uncoalesced};
use crate::model::{Lines, lane_step, models, stride};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_source::kernel_model::{AccessKind, Atom, KernelModel, Step};

pub struct RowWalk;

const NAME: Code = Code::RowWalk;

/// A loop with a constant bound this short is a vector's width, not a row.
const SHORT_ROW: i64 = 32;

/// One loop that walks a row alone, with the uncoalesced accesses it steps along.
pub struct Walk<'m> {
    pub id: usize,
    pub walked: Vec<Uncoalesced<'m>>,
    /// The loop accumulates (a sum, a max, a norm).
    pub reduces: bool,
    /// It stores along the row.
    pub writes: bool,
}

/// The loops of `model` that walk a row alone (a counter of step 1 along the
/// contiguous dimension, more than a vector's width long, not a register
/// tile's template width) and the uncoalesced accesses each steps along.
pub fn row_walks<'m>(input: &LintInput, model: &'m KernelModel) -> Vec<Walk<'m>> {
    let fixed = template_values(input, &model.name);
    let mut bad: Vec<Option<Uncoalesced<'m>>> = uncoalesced(model).into_iter().map(Some).collect();
    let mut out = Vec::new();
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
        // Uncoalesced accesses stepping by one element per iteration of this
        // loop (each belongs to its innermost such loop: taken once).
        let walked: Vec<Uncoalesced<'m>> = bad
            .iter_mut()
            .filter(|u| {
                u.as_ref().is_some_and(|u| {
                    u.access.loops.contains(&id) && u.access.index.coefficient(atom).as_constant() == Some(1)
                })
            })
            .filter_map(Option::take)
            .collect();
        if walked.is_empty() {
            continue;
        }
        let reduces = walked.iter().any(|u| u.access.accumulated)
            || model.accesses.iter().any(|a| a.loops.contains(&id) && a.accumulated);
        let writes = walked.iter().any(|u| u.access.kind != AccessKind::Read);
        out.push(Walk { id, walked, reduces, writes });
    }
    out
}

/// The fix for a kernel's row walks, decided once per kernel by its model, so
/// every loop of it gets the same advice: a kernel whose walk reduces a row
/// (or whose pattern is a row reduction) wants a warp per row; one that only
/// stores per element wants a thread per element; one that only reads, lanes
/// walking the row together.
pub fn row_walk_fix(model: &KernelModel, walks: &[Walk], var: &str) -> String {
    let reduces = walks.iter().any(|w| w.reduces)
        || model.pattern().is_some_and(|p| p.pattern == kernelpro_source::kernel_model::Pattern::RowReduction);
    let writes = walks.iter().any(|w| w.writes);
    if reduces {
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
    }
}

impl StaticTool for RowWalk {
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut lines = Lines::default();
        for model in models(input).iter() {
            let walks = row_walks(input, model);
            for w in &walks {
                let l = &model.loops[w.id];
                let first = &w.walked[0];
                // On the first walked access: UncoalescedAccess leaves the walked
                // accesses to this finding, so the line has one diagnosis.
                if !lines.first(&model.name, first.access.line()) {
                    continue;
                }
                let var = l.var.as_deref().unwrap_or("?");
                let bound = l.bound.as_ref().map(|b| format!("`{b}`")).unwrap_or_else(|| "many".into());
                let mut arrays: Vec<String> = w.walked.iter().map(|u| format!("`{}`", u.access.base)).collect();
                arrays.dedup();
                let a = first.access;
                let message = format!(
                    "each thread walks a row of {} alone along `{var}` ({bound} elements, one per iteration) while neighbouring lanes are {} apart: a warp reads 32 rows at once, {}",
                    arrays.join(", "),
                    stride(&lane_step(a), &a.elem),
                    first.sectors_text()
                );
                findings.push(
                    finding(NAME, Severity::Warning, a.span, &model.name, message)
                        .with_evidence("loop", format!("{var}: bound {bound} (line {})", l.span.start.line + 1))
                        .with_evidence(
                            "walked accesses",
                            w.walked.iter().map(|u| u.access.text.clone()).collect::<Vec<_>>().join(", "),
                        )
                        .with_evidence("lane stride (elements)", lane_step(a).to_string())
                        .with_guidance(row_walk_fix(model, &walks, var)),
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
