//! Shared-memory bank conflicts from the kernel model's index form. Shared
//! memory has 32 banks of 4-byte words; the lanes of a warp (placed by the
//! block shape) are evaluated and the most distinct words one bank must serve
//! is the n-way conflict. All lanes on one word is a broadcast, no conflict.
//! A lane stride that is symbolic (`2 * s` words) is judged by its constant
//! factor: an even factor guarantees at least a 2-way conflict.

use super::finding;
use crate::locate::{instructions_on, listing, sass_functions};
use crate::model::{Lines, models};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_source::kernel_model::{Access, Atom, KernelModel, SharedArray, Space, bank_conflict_ways, poly::gcd};

pub struct SharedBankConflict;

const NAME: Code = Code::SharedBankConflict;

/// Fires from a 4-way conflict: a 2-way one (a 16-wide tile padded to 17 on
/// 16×16 blocks) costs one replay and is not worth a rewrite.
const MIN_WAYS: u32 = 4;

/// An n-way conflict, exact or a lower bound (symbolic stride).
struct Conflict {
    ways: u32,
    at_least: bool,
    /// Lane stride in 4-byte words, as written.
    stride_words: String,
}

impl StaticTool for SharedBankConflict {
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut lines = Lines::default();
        for model in models(input).iter() {
            let mut found: Vec<(&Access, Conflict)> = model
                .accesses
                .iter()
                .filter(|a| a.space == Space::Shared)
                .filter_map(|a| Some((a, conflict(model, a)?)))
                .collect();
            found.sort_by_key(|(a, c)| (a.line(), std::cmp::Reverse(c.ways)));
            for (a, c) in found {
                if !lines.first(&model.name, a.line()) {
                    continue;
                }
                let array = model.shared.iter().find(|s| s.name == a.base);
                let ways = if c.at_least { format!("at least {}-way", c.ways) } else { format!("{}-way", c.ways) };
                let mut f = finding(
                    NAME,
                    Severity::Warning,
                    a.span,
                    &model.name,
                    format!(
                        "`{}`: lanes are {} words apart in `{}`: {ways} bank conflict (the request is served in {}{} passes)",
                        a.text,
                        c.stride_words,
                        a.base,
                        if c.at_least { "at least " } else { "" },
                        c.ways
                    ),
                )
                .with_evidence("index (elements)", a.index.to_string())
                .with_evidence("stride between lanes (words)", c.stride_words.clone())
                .with_guidance(guidance(array, &c));
                if let Some(s) = array {
                    f = f.with_evidence("shared array", declaration(s, None));
                }
                let line = a.line() + 1;
                let sass: Vec<_> = input
                    .sass
                    .map(|s| instructions_on(&sass_functions(s, &model.name), input.path, line))
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|i| matches!(i.base_opcode(), "LDS" | "STS" | "ATOMS"))
                    .collect();
                if !sass.is_empty() {
                    f = f.with_evidence("sass", listing(&sass, 4));
                }
                findings.push(f);
            }
        }
        findings
    }
}

fn conflict(model: &KernelModel, a: &Access) -> Option<Conflict> {
    let bytes = a.elem.bytes?;
    if bytes % 4 != 0 && bytes > 4 {
        return None;
    }
    let lane = a.lane_coefficient();
    let words_per_elem = (bytes / 4).max(1) as i64;
    let stride_words = match lane.as_constant() {
        Some(k) => (k * words_per_elem).to_string(),
        None if words_per_elem == 1 => format!("`{lane}`"),
        None => format!("`{}`", lane.scale(words_per_elem)),
    };
    if let Some(ways) = bank_conflict_ways(&model.geometry(), &a.index, bytes) {
        return (ways >= MIN_WAYS).then_some(Conflict { ways, at_least: false, stride_words });
    }
    // A symbolic stride: its constant factor's power of two divides every lane difference.
    if !a.index.is_affine() || bytes < 4 || lane.is_zero() {
        return None;
    }
    let ways = gcd(lane.content() * words_per_elem, 32) as u32;
    // A stride that scales with a loop counter (`2 * s * tid`) grows to 32-way.
    let grows = lane.atoms().any(|a| matches!(a, Atom::Loop(_) | Atom::Opaque { .. }));
    (ways >= MIN_WAYS || (ways >= 2 && grows)).then_some(Conflict { ways, at_least: true, stride_words })
}

fn guidance(array: Option<&SharedArray>, c: &Conflict) -> String {
    match array {
        Some(s) if s.dims.len() >= 2 && s.dims.iter().all(|d| d.is_some()) => format!(
            "Pad the inner dimension by one element so a column's words fall in different banks: `{}`.",
            declaration(s, Some(1))
        ),
        _ if c.at_least => "Make neighbouring lanes touch neighbouring words: index the active threads contiguously (`sdata[tid] += sdata[tid + s]` with `tid < s`) instead of scaling the thread index by a stride.".to_string(),
        _ => "Use an odd stride between lanes (pad each lane's row by one word, e.g. 33 instead of 32) or let consecutive lanes touch consecutive words.".to_string(),
    }
}

/// `__shared__ float tile[32][33]`, with `pad` added to the inner dimension.
fn declaration(s: &SharedArray, pad: Option<i64>) -> String {
    let n = s.dims.len();
    let dims: String = s
        .dims
        .iter()
        .enumerate()
        .map(|(i, d)| match d {
            Some(v) => format!("[{}]", v + if i + 1 == n { pad.unwrap_or(0) } else { 0 }),
            None => "[]".to_string(),
        })
        .collect();
    format!("__shared__ {} {}{dims}", s.elem.name, s.name)
}
