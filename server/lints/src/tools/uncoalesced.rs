//! Global accesses whose neighbouring lanes are far apart: from the kernel
//! model's index form, the 32 lanes of a warp (placed by the block shape) are
//! evaluated and the 32-byte sectors one request touches are counted. A
//! thread-per-row `x[r * C + c]` touches 32 sectors where 4 would do.

use super::finding;
use super::row_walk::{Walk, row_walk_fix, row_walks};
use crate::model::{Lines, geometry_note, lane_step, models, stride};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_source::kernel_model::{
    Access, AccessKind, Atom, Dim, KernelModel, Poly, Space, Step, sectors_per_request,
};
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
        .filter(|a| {
            a.space == Space::Global && !a.is_atomic() && !covered_by_neighbours(model, a) && !from_own_start(model, a)
        })
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

/// Lanes apart only because each thread's loop starts at its own place and
/// walks forward one element at a time to a common end (`for (k = i; k < n;
/// k++) y[k] = f(x[k])`, the scalar tail after `float4`s of `&x[4 * i]`):
/// within a few iterations the lanes cover the gaps between their starts,
/// so the warp reads one contiguous range, which L1 serves. A row walk
/// spreads lanes through the row's offset (`x[i * C + k]`), not the start.
fn from_own_start(model: &KernelModel, a: &Access) -> bool {
    model.loops_of(a).any(|l| {
        let (Some(atom), Some(init)) = (&l.atom, &l.init) else { return false };
        let lane = |p: &Poly| p.coefficient(&Atom::Tid(Dim::X)).add(&p.coefficient(&Atom::Lane));
        let start = lane(init);
        matches!(&l.step, Step::Add(s) if s.as_constant().is_some_and(|s| s.abs() == 1))
            && !start.is_zero()
            && l.bound.as_ref().is_some_and(|b| lane(b).is_zero())
            && a.lane_coefficient() == a.index.coefficient(atom).mul(&start)
    })
}

impl StaticTool for UncoalescedAccess {
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut lines = Lines::default();
        for model in models(input).iter() {
            // An access a row walk steps along is RowWalk's finding (one diagnosis per line).
            let walks = row_walks(input, model);
            let walked: Vec<*const Access> =
                walks.iter().flat_map(|w| w.walked.iter().map(|u| u.access as *const Access)).collect();
            let mut found: Vec<_> =
                uncoalesced(model).into_iter().filter(|u| !walked.contains(&(u.access as *const Access))).collect();
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
                        .with_guidance(guidance(model, &walks, a)),
                );
            }
        }
        findings
    }
}

/// The expert fix for this access's pattern.
fn guidance(model: &KernelModel, walks: &[Walk], a: &Access) -> String {
    let walks_row =
        model.loops_of(a).find(|l| l.atom.as_ref().is_some_and(|at| a.index.coefficient(at).as_constant() == Some(1)));
    let partner = model.accesses.iter().find(|b| {
        b.statement == a.statement
            && b.base != a.base
            && b.space == Space::Global
            && b.is_read() != a.is_read()
            && b.lane_coefficient().as_constant() == Some(1)
    });
    if let Some(l) = walks_row {
        // The same advice as RowWalk's on this kernel's other loops.
        format!(
            "Each thread walks its own row of `{}`, so a warp reads 32 rows at once. {}",
            a.base,
            row_walk_fix(model, walks, l.var.as_deref().unwrap_or("c"))
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
