//! Global accesses whose neighbouring lanes are far apart: from the kernel
//! model's index form, the 32 lanes of a warp (placed by the block shape) are
//! evaluated and the 32-byte sectors one request touches are counted. A
//! thread-per-row `x[r * C + c]` touches 32 sectors where 4 would do.

use super::finding;
use crate::model::{Lines, geometry_note, lane_step, models, stride};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_source::kernel_model::{Access, AccessKind, Atom, Dim, KernelModel, Poly, Space, sectors_per_request};
use std::collections::BTreeSet;

pub struct UncoalescedAccess;

const NAME: Code = Code::UncoalescedAccess;

/// Fires at this many times the fewest sectors (3 floats apart and more):
/// a 2-apart pair is usually two halves of one vector (ScalarLoads' case).
const MIN_RATIO: u32 = 3;

/// An uncoalesced access with its numbers.
pub struct Uncoalesced<'m> {
    pub access: &'m Access,
    pub sectors: u32,
    /// The fewest sectors (the most, over element sizes up to 8 bytes, when the type is a template parameter).
    pub ideal: u32,
    pub elem_known: bool,
}

impl Uncoalesced<'_> {
    /// `32 sectors per request instead of 4`.
    pub fn sectors_text(&self) -> String {
        if self.elem_known {
            format!("{} sectors per request instead of {}", self.sectors, self.ideal)
        } else {
            format!(
                "at least {} sectors per request instead of at most {} (`{}` is a template parameter)",
                self.sectors, self.ideal, self.access.elem.name
            )
        }
    }
}

/// The model's global accesses that waste sectors (atomics are AtomicContention's).
pub fn uncoalesced(model: &KernelModel) -> Vec<Uncoalesced<'_>> {
    let geometry = model.geometry();
    model
        .accesses
        .iter()
        .filter(|a| a.space == Space::Global && !a.is_atomic() && !covered_by_neighbours(model, a))
        .filter_map(|a| match a.elem.bytes {
            Some(bytes) => {
                let (sectors, ideal) = sectors_per_request(&geometry, &a.index, bytes)?;
                (sectors >= MIN_RATIO * ideal).then_some(Uncoalesced { access: a, sectors, ideal, elem_known: true })
            }
            // A template element: count with 1-byte elements (a lower bound) and
            // fire only when that alone is far past any type's fewest (8, for 8 bytes).
            None => {
                let (sectors, _) = sectors_per_request(&geometry, &a.index, 1)?;
                (sectors >= MIN_RATIO * 8).then_some(Uncoalesced { access: a, sectors, ideal: 8, elem_known: false })
            }
        })
        .collect()
}

/// Accesses of one base at one index plus constant offsets that together fill
/// the gap between lanes (`x[4*i + 0]` … `x[4*i + 3]`): the warp reads a
/// contiguous range (ScalarLoads' case, not this one).
fn covered_by_neighbours(model: &KernelModel, a: &Access) -> bool {
    let Some(stride) = lane_step(a).as_constant().filter(|s| *s != 0) else {
        return false;
    };
    let rest = a.index.sub(&Poly::constant(a.index.constant_term()));
    let offsets: BTreeSet<i64> = model
        .accesses
        .iter()
        .filter(|b| {
            b.base == a.base && b.space == a.space && b.index.sub(&Poly::constant(b.index.constant_term())) == rest
        })
        .map(|b| b.index.constant_term())
        .collect();
    offsets.len() as i64 >= stride.abs()
}

impl StaticTool for UncoalescedAccess {
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut lines = Lines::default();
        for model in models(input).iter() {
            let mut found = uncoalesced(&model);
            // The worst access of a line speaks for it.
            found.sort_by_key(|u| (u.access.line(), std::cmp::Reverse(u.sectors)));
            for u in found {
                let a = u.access;
                if !lines.first(&model.name, a.line()) {
                    continue;
                }
                let lane = a.lane_coefficient();
                let geometry = model.geometry();
                let apart = if lane.is_zero() {
                    // Lanes differ only through threadIdx.y (blockDim.x < 32).
                    format!(
                        "rows of threadIdx.y are {} apart",
                        stride(&a.index.coefficient(&Atom::Tid(Dim::Y)), &a.elem)
                    )
                } else {
                    format!("lanes are {} apart", stride(&lane, &a.elem))
                };
                let what = match a.kind {
                    AccessKind::Read => "reads",
                    _ => "writes",
                };
                let message = format!(
                    "`{}` {what} `{}` where {apart}: {}{}",
                    a.text,
                    a.base,
                    u.sectors_text(),
                    geometry_note(&geometry)
                );
                findings.push(
                    finding(NAME, Severity::Warning, a.span, &model.name, message)
                        .with_evidence("index", a.index.to_string())
                        .with_evidence("lane stride (elements)", lane.to_string())
                        .with_evidence("element", format!("{} ({} bytes)", a.elem.name, a.elem.bytes.unwrap_or(0)))
                        .with_evidence("sectors per warp request", format!("{} (ideal {})", u.sectors, u.ideal))
                        .with_guidance(guidance(&model, a)),
                );
            }
        }
        findings
    }
}

/// The expert fix for this access's pattern.
fn guidance(model: &KernelModel, a: &Access) -> String {
    let walks_row =
        model.loops_of(a).any(|l| l.atom.as_ref().is_some_and(|at| a.index.coefficient(at).as_constant() == Some(1)));
    let partner = model.accesses.iter().find(|b| {
        b.statement == a.statement
            && b.base != a.base
            && b.space == Space::Global
            && b.is_read() != a.is_read()
            && b.lane_coefficient().as_constant() == Some(1)
    });
    if walks_row {
        format!(
            "Each thread walks its own row, so a warp reads 32 rows at once. Give a row to a warp (or a block for long rows): lanes stride the row together (`for (int c = lane; c < n; c += 32)`, consecutive lanes on consecutive elements of `{}`), and combine per-row results with `__shfl_xor_sync`.",
            a.base
        )
    } else if let Some(p) = partner {
        format!(
            "`{}` is coalesced but `{}` is not (a transpose): stage a 32×32 tile through shared memory padded to 33 columns (`__shared__ float tile[32][33]`), read it with threadIdx.x on `{}`'s contiguous index and write it with threadIdx.x on `{}`'s.",
            p.text, a.text, p.base, a.base
        )
    } else {
        "Map threadIdx.x to the contiguous (last) index of the array so neighbouring lanes touch neighbouring elements, or stage the data through shared memory and read it there in the transposed order.".to_string()
    }
}
