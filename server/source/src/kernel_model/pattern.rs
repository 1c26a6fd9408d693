//! The parallel pattern of a kernel, recognised from what its threads touch
//! (not from its syntax): the class a rewrite answers. Names follow the task
//! files' `// class:` lines (map, row-reduction, gather, contraction,
//! scalar-reduction, histogram, stencil, transpose). `None` when no rule
//! holds: the model never guesses.

use super::{Access, AccessKind, Atom, Dep, KernelModel, Poly, Space, Step};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    Map,
    RowReduction,
    Gather,
    Contraction,
    ScalarReduction,
    Histogram,
    Stencil,
    Transpose,
}

impl Pattern {
    /// The `// class:` name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Map => "map",
            Pattern::RowReduction => "row-reduction",
            Pattern::Gather => "gather",
            Pattern::Contraction => "contraction",
            Pattern::ScalarReduction => "scalar-reduction",
            Pattern::Histogram => "histogram",
            Pattern::Stencil => "stencil",
            Pattern::Transpose => "transpose",
        }
    }
}

/// The pattern and the fact it was recognised by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recognised {
    pub pattern: Pattern,
    pub because: String,
}

fn global_reads(m: &KernelModel) -> impl Iterator<Item = &Access> {
    m.accesses.iter().filter(|a| a.space == Space::Global && a.kind == AccessKind::Read)
}

pub fn recognise(m: &KernelModel) -> Option<Recognised> {
    let found = |pattern, because: String| Some(Recognised { pattern, because });
    let atomics: Vec<&Access> = m.accesses.iter().filter(|a| a.is_atomic()).collect();
    if let Some(a) = atomics.iter().find(|a| a.is_irregular()) {
        return found(Pattern::Histogram, format!("`{}` updates a data-chosen address", a.text));
    }
    // A stencil (see [`stencil_read`]).
    if let Some((_, because)) = m
        .accesses
        .iter()
        .filter(|a| a.is_read() && a.space != Space::Local)
        .find_map(|a| Some((a, stencil_read(m, a)?)))
    {
        return found(Pattern::Stencil, because);
    }
    // A product of two loads accumulated in a loop (dot products, register tiles).
    for a in m.accesses.iter().filter(|a| a.in_product && a.accumulated && a.is_read() && !a.loops.is_empty()) {
        if let Some(b) =
            m.accesses.iter().find(|b| b.statement == a.statement && b.base != a.base && b.in_product && b.is_read())
        {
            return found(Pattern::Contraction, format!("`{} * {}` accumulated in a loop", a.text, b.text));
        }
    }
    // A scalar reduction: an atomic (or a per-block write) of a value reduced over the block.
    if let Some(a) = atomics
        .iter()
        .find(|a| a.space == Space::Global && a.index.dep() == Dep::Uniform && a.lane_coefficient().is_zero())
    {
        return found(Pattern::ScalarReduction, format!("`{}` gathers the block's values into one address", a.text));
    }
    if let Some(a) = global_reads(m).find(|a| a.is_irregular()) {
        return found(Pattern::Gather, format!("`{}` reads where the data says", a.text));
    }
    // A row reduction: reads walking a row in a loop (per thread, warp or block:
    // not grid-stride), written to fewer places after the loop.
    let tree =
        m.accesses.iter().any(|a| a.space == Space::Shared && a.kind == AccessKind::ReadWrite && !a.loops.is_empty())
            || m.loops.iter().any(|l| matches!(l.step, Step::Scale(_)));
    let per_block_write =
        m.accesses.iter().any(|a| a.space == Space::Global && !a.is_read() && a.index.dep() != Dep::Thread);
    for a in global_reads(m) {
        if m.branches_of(a).any(|b| b.kind == super::BranchKind::SingleThread) {
            continue;
        }
        let Some((id, l)) = a.loops.iter().rev().map(|&i| (i, &m.loops[i])).find(|(_, l)| {
            !l.grid_stride && long(l) && l.atom.as_ref().is_some_and(|k| !a.index.coefficient(k).is_zero())
        }) else {
            continue;
        };
        let written_after =
            m.accesses.iter().any(|w| w.space == Space::Global && !w.is_read() && !w.loops.contains(&id));
        if written_after {
            return found(
                Pattern::RowReduction,
                format!("`{}` walks a row along `{}`", a.text, l.var.as_deref().unwrap_or("?")),
            );
        }
    }
    if let Some(a) = m
        .accesses
        .iter()
        .find(|a| a.accumulated && a.is_read() && a.space == Space::Global && m.loops_of(a).all(|l| l.grid_stride))
        && !a.loops.is_empty()
    {
        return found(Pattern::ScalarReduction, format!("`{}` accumulated over the whole input", a.text));
    }
    if tree && per_block_write {
        return found(Pattern::ScalarReduction, "a shared-memory tree per block, one write per block".into());
    }
    // A transpose: one statement reads and writes with the lanes on different dimensions.
    for w in m.accesses.iter().filter(|a| a.space == Space::Global && a.kind == AccessKind::Write) {
        let wl = w.lane_coefficient();
        for r in global_reads(m).filter(|r| r.statement == w.statement || r.base != w.base) {
            let rl = r.lane_coefficient();
            let contiguous = |p: &Poly| p.as_constant() == Some(1);
            let far = |p: &Poly| p.as_constant().is_none_or(|k| k.abs() >= 8);
            let swapped = |x: &Access, y: &Access| {
                let (xy, yy) =
                    (x.index.coefficient(&Atom::Tid(super::Dim::Y)), y.index.coefficient(&Atom::Tid(super::Dim::Y)));
                !xy.is_zero() && !yy.is_zero() && xy != yy
            };
            if r.statement == w.statement
                && ((contiguous(&rl) && far(&wl))
                    || (contiguous(&wl) && far(&rl))
                    || (contiguous(&rl) && contiguous(&wl) && swapped(r, w) && r.space != w.space))
            {
                return found(
                    Pattern::Transpose,
                    format!("`{}` and `{}` put the lanes on different dimensions", r.text, w.text),
                );
            }
        }
    }
    // A transpose through a shared tile: the tile is read with the lanes on its other dimension.
    if let Some(s) = m.accesses.iter().find(|a| {
        a.space == Space::Shared && a.is_read() && a.lane_coefficient().as_constant().is_some_and(|k| k.abs() >= 16)
    }) && m.accesses.iter().any(|a| a.space == Space::Global && !a.is_read() && a.statement == s.statement)
    {
        return found(Pattern::Transpose, format!("`{}` reads the tile across its rows", s.text));
    }
    // A map: every global access one element per lane apart (or a broadcast), no accumulation.
    let global: Vec<&Access> = m.accesses.iter().filter(|a| a.space == Space::Global).collect();
    let writes = global.iter().any(|a| !a.is_read() && !a.is_atomic());
    if writes && !global.is_empty() && global.iter().all(|a| !a.is_atomic() && !a.accumulated && a.index.is_affine()) {
        return found(Pattern::Map, "every element is read and written independently".into());
    }
    None
}

/// `x[i + k]`: the loop counter moves the index as much as the lane does.
fn stencil_like(a: &Access, k: &Atom) -> bool {
    let lane = a.lane_coefficient();
    let c = a.index.coefficient(k);
    !lane.is_zero() && (c == lane || c == lane.neg())
}

/// A loop over more than a vector's or a tile's few elements.
fn long(l: &super::Loop) -> bool {
    l.bound.as_ref().is_none_or(|b| b.as_constant().is_none_or(|k| k.abs() > 32))
}

/// Why `a` is a stencil's read, when it is one: its loop counter moves it as
/// the lane does (`x[i + k]`), or it is one of 3+ reads of the array (in the
/// same loops) at uniform distances that reach a neighbour lane's elements
/// (`x[i - 1]`, `x[i]`, `x[i + 1]`; rows `±ny` of a 2D grid). A thread's own
/// quad (`x[4*i + 0..3]`) reaches no neighbour and is not one.
pub fn stencil_read(m: &KernelModel, a: &Access) -> Option<String> {
    let lane = a.lane_coefficient();
    if lane.is_zero() || !a.index.is_affine() || !a.is_read() {
        return None;
    }
    if let Some(l) = m.loops_of(a).find(|l| l.atom.as_ref().is_some_and(|k| stencil_like(a, k))) {
        return Some(format!(
            "`{}` moves with the lane and with `{}` alike: lane `l` reads elements `l + {}` over the loop",
            a.text,
            l.var.as_deref().unwrap_or("?"),
            l.var.as_deref().unwrap_or("?")
        ));
    }
    let mut distances: Vec<Poly> = m
        .accesses
        .iter()
        .filter(|b| b.is_read() && b.base == a.base && b.loops == a.loops)
        .map(|b| b.index.sub(&a.index))
        .filter(|d| d.dep() == Dep::Uniform && !d.atoms().any(|x| matches!(x, Atom::Loop(_))))
        .collect();
    distances.sort();
    distances.dedup();
    let reaches = |d: &Poly| {
        (lane.as_constant().is_none() && (d.sub(&lane).as_constant().is_some() || d.add(&lane).as_constant().is_some()))
            || matches!((d.as_constant(), lane.as_constant()), (Some(d), Some(k)) if d != 0 && d.abs() >= k.abs())
    };
    (distances.len() >= 3 && distances.iter().any(reaches)).then(|| {
        format!("{} reads of `{}` around one index reach the neighbouring threads' elements", distances.len(), a.base)
    })
}
