//! [`StencilTile`]: a 1D stencil (each unit reads an input at its own index
//! plus a loop-varying offset, `x[i + j - r]`, as the kernel model's pattern
//! says) reads through a shared tile: each block step loads its units'
//! elements and a halo of [`HALO`] on either side once, coalesced, and the
//! user's per-unit statements read the tile instead of global memory. A read
//! outside the tile (a radius past the halo) goes to global memory as
//! before, so the halo is a guess that costs speed, never correctness. Only
//! elements inside `[0, BOUND)` are loaded, where the kernel's own guard on
//! those reads compares them with the unit bound (`p < n`), so nothing the
//! original would not touch is read.

use super::launch::{Tuning, launch_variants};
use super::recognize::{Piece, names_in, render, units};
use super::{BLOCK_THREADS, BLOCK_TID};
use crate::kernel::Kernel;
use crate::syntax::{descendants, indent_at};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::kernel_model::{AccessKind, BranchSource, Space, pattern::stencil_read};
use tree_sitter::Node;

pub struct StencilTile;

/// Elements loaded on either side of a block's units.
const HALO: u32 = 32;

fn rewrites(k: &Kernel) -> Vec<Rewrite> {
    rewrite(k).unwrap_or_default()
}

fn rewrite(k: &Kernel) -> Option<Vec<Rewrite>> {
    let u = units(k)?;
    let [index] = &u.indices[..] else { return None };
    if !u.fixed.is_empty() || u.body.iter().any(|p| matches!(p, Piece::Derived(_))) {
        return None;
    }
    let model = k.model()?;
    // The input the stencil reads: a read-only buffer parameter whose reads the model calls a stencil's.
    let read = model
        .accesses
        .iter()
        .find(|a| a.space == Space::Global && a.kind == AccessKind::Read && stencil_read(&model, a).is_some())?;
    let x = read.base.clone();
    let p = k.param(&x).filter(|p| p.pointer)?;
    if model.accesses.iter().any(|a| a.base == x && a.kind != AccessKind::Read) {
        return None;
    }
    // The kernel's guard on those reads compares them with the unit bound: the input has that many elements.
    let bound = index.bound.as_str();
    let guarded = model.accesses.iter().filter(|a| a.base == x).all(|a| {
        model
            .branches_of(a)
            .filter(|b| matches!(b.source, BranchSource::If | BranchSource::Ternary))
            .any(|b| b.condition.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == bound))
    });
    if !guarded || !bound.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let nodes: Vec<Node> = u
        .body
        .iter()
        .filter_map(|p| if let Piece::Node(n) | Piece::Skip(n, _) = p { Some(*n) } else { None })
        .collect();
    // Every mention of the input is a subscript `x[E]`, rewritten to the tile read `kp_x(E)`.
    let mut edits_of: Vec<Vec<(std::ops::Range<usize>, String)>> = Vec::new();
    for n in &nodes {
        let mut edits = Vec::new();
        for d in descendants(*n).into_iter().filter(|d| d.kind() == "identifier" && k.text_of(*d) == x) {
            let sub = d
                .parent()
                .filter(|s| s.kind() == "subscript_expression" && s.child_by_field_name("argument") == Some(d))?;
            let e = sub.child_by_field_name("indices")?.named_child(0)?;
            if descendants(e).iter().any(|i| i.kind() == "identifier" && k.text_of(*i) == x) {
                return None;
            }
            edits.push((sub.byte_range(), format!("kp_x({})", k.text_of(e))));
        }
        edits_of.push(edits);
    }
    if edits_of.iter().all(Vec::is_empty)
        || names_in(k, k.body()).iter().filter(|n| **n == x).count() != edits_of.iter().map(Vec::len).sum::<usize>()
    {
        return None;
    }
    let ty = p.base.clone();
    let outer = indent_at(k.text, k.body().start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let ind3 = format!("{ind2}  ");
    let mut body = String::new();
    let mut at = 0;
    for piece in &u.body {
        let edits = match piece {
            Piece::Node(_) | Piece::Skip(..) => {
                at += 1;
                edits_of[at - 1].clone()
            }
            Piece::Derived(_) => Vec::new(),
        };
        body.push_str(&format!("{ind3}{}\n", render(k, *piece, &edits, &ind3)?));
    }
    let rebind: String = u.rebind("kp_u").lines().map(|l| format!("{ind3}{l}\n")).collect();
    let text = format!(
        "{{\n{ind}// A shared tile of each block step's inputs and a halo of {HALO} either side (kernelpro StencilTile).\n\
         {prologue}{ind}__shared__ {ty} kp_tile[1024 + 2 * {HALO}];\n\
         {ind}const long long kp_n = {count};\n\
         {ind}const long long kp_threads = {BLOCK_THREADS};\n\
         {ind}for (long long kp_base = (long long)blockIdx.x * kp_threads; kp_base < kp_n; kp_base += (long long)gridDim.x * kp_threads) {{\n\
         {ind2}const long long kp_lo = kp_base - {HALO} < 0 ? 0 : kp_base - {HALO};\n\
         {ind2}const long long kp_hi = kp_base + kp_threads + {HALO} > (long long)({bound}) ? (long long)({bound}) : kp_base + kp_threads + {HALO};\n\
         {ind2}__syncthreads();\n\
         {ind2}for (long long kp_q = kp_lo + {BLOCK_TID}; kp_q < kp_hi; kp_q += kp_threads) kp_tile[kp_q - kp_lo] = {x}[kp_q];\n\
         {ind2}__syncthreads();\n\
         {ind2}auto kp_x = [&](long long kp_q) -> {ty} {{ return kp_q >= kp_lo && kp_q < kp_hi ? kp_tile[kp_q - kp_lo] : {x}[kp_q]; }};\n\
         {ind2}for (long long kp_u = kp_base + {BLOCK_TID}; kp_u < kp_n && kp_u < kp_base + kp_threads; kp_u += kp_threads) {{\n\
         {rebind}{body}{ind2}}}\n\
         {ind}}}\n{outer}}}",
        prologue = u.prologue(k, &ind)?,
        count = u.count(),
    );
    let mut source = k.text.to_string();
    source.replace_range(k.body().byte_range(), &text);
    let note = format!("1D stencil over ({}) reading {x} through a shared tile with a halo of {HALO}", index.name);
    Some(launch_variants(k, &Rewrite { source, note }, &u, Tuning::Threads))
}

impl Recipe for StencilTile {
    fn name(&self) -> &'static str {
        "StencilTile"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::Stencil]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::MissedReuse, Code::SharedMemTiling, Code::UncoalescedAccess]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        super::with_units_view(text, kernel, rewrites)
    }
}
