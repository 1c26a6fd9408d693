//! [`StencilTile`]: a 1D stencil (each unit reads an input at its own index
//! plus a loop-varying offset, `x[i + j - r]`, as the kernel model's pattern
//! says) reads through a shared tile: each block step loads its units'
//! elements and a halo of [`HALO`] on either side once, coalesced, and the
//! user's per-unit statements read the tile instead of global memory. A read
//! outside the tile (a radius past the halo) goes to global memory as
//! before, so the halo is a guess that costs speed, never correctness. Only
//! elements inside `[0, BOUND)` are loaded, where the kernel's own guard on
//! those reads compares them with the unit bound (`p < n`), so nothing the
//! original would not touch is read. A 2D window (units `(row, col)`,
//! short window loops, reads `x[A * W + B]`) gets 32x32 output tiles and a
//! shared input tile with a halo of 4 on every side the same way.

use super::launch::{Tuning, launch_variants};
use super::units_text::{UnitsText, render};
use super::{BLOCK_THREADS, BLOCK_TID};
use crate::kernel::Kernel;
use crate::syntax::{descendants, indent_at};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::kernel_model::{AccessKind, BranchSource, Space, pattern::stencil_read};
use kernelpro_source::units::recognize::{Piece, Units, names_in, units};
use tree_sitter::Node;

pub struct StencilTile;

/// Elements loaded on either side of a block's units.
const HALO: u32 = 32;

fn rewrites(k: &Kernel) -> Vec<Rewrite> {
    rewrite(k).or_else(|| rewrite_2d(k)).unwrap_or_default()
}

/// Output tile of the 2D form: rows and columns of units a block step covers.
const TILE_2D: u32 = 32;
/// Input elements loaded around a 2D tile on every side.
const HALO_2D: u32 = 4;

/// `A * W + B` (or `B + A * W`, `W * A + B`, `B + W * A`) with `W` the identifier `w`: (A, B) as text.
fn row_col<'t>(k: &Kernel<'t>, e: Node, w: &str) -> Option<(String, String)> {
    let e = kernelpro_source::units::recognize::strip_parens(e);
    if e.kind() != "binary_expression" || e.child_by_field_name("operator").map(|o| k.text_of(o)) != Some("+") {
        return None;
    }
    let (l, r) = (e.child_by_field_name("left")?, e.child_by_field_name("right")?);
    let product = |n: Node| -> Option<String> {
        let n = kernelpro_source::units::recognize::strip_parens(n);
        if n.kind() != "binary_expression" || n.child_by_field_name("operator").map(|o| k.text_of(o)) != Some("*") {
            return None;
        }
        let (a, b) = (n.child_by_field_name("left")?, n.child_by_field_name("right")?);
        if k.text_of(b) == w {
            Some(k.text_of(a).to_string())
        } else if k.text_of(a) == w {
            Some(k.text_of(b).to_string())
        } else {
            None
        }
    };
    if let Some(a) = product(l) {
        Some((a, k.text_of(r).to_string()))
    } else {
        product(r).map(|a| (a, k.text_of(l).to_string()))
    }
}

/// A 2D stencil (units `(row, col)` bounded by `H` and `W`, each reading the input at
/// `x[A * W + B]` around its own element, under a guard that names both bounds) reads its
/// input through a shared tile of 32x32 outputs and a halo of [`HALO_2D`] on every side:
/// each block step loads the tile's inputs once, coalesced along the columns, and every
/// read `x[A * W + B]` becomes `kp_x(A, B)`, the tile's element when it holds it (inside
/// the tile and inside `H x W`, where it was loaded), the global one `x[A * W + B]` otherwise
/// (a radius past the halo costs speed, never correctness).
/// Every mention of input `x` in the unit body's statements is a subscript `x[E]` (E not naming `x`),
/// rewritten to the tile read `kp_x(ARGS)` with `args(E)` (`E` in 1D, `row, col` in 2D): the edits of
/// each statement; `None` where a mention is anything else.
type Edits = Vec<(std::ops::Range<usize>, String)>;
fn tile_reads(k: &Kernel, u: &Units, x: &str, args: impl Fn(Node) -> Option<String>) -> Option<Vec<Edits>> {
    let nodes: Vec<Node> = u
        .body
        .iter()
        .filter_map(|p| if let Piece::Node(n) | Piece::Skip(n, _) = p { Some(*n) } else { None })
        .collect();
    let mut edits_of: Vec<Edits> = Vec::new();
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
            edits.push((sub.byte_range(), format!("kp_x({})", args(e)?)));
        }
        edits_of.push(edits);
    }
    if edits_of.iter().all(Vec::is_empty)
        || names_in(k, k.body()).iter().filter(|n| **n == x).count() != edits_of.iter().map(Vec::len).sum::<usize>()
    {
        return None;
    }
    Some(edits_of)
}

/// The unit body's statements with their tile reads, one a line at indent `ind`.
fn render_body(k: &Kernel, u: &Units, edits_of: &[Edits], ind: &str) -> Option<String> {
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
        body.push_str(&format!("{ind}{}\n", render(k, *piece, &edits, ind)?));
    }
    Some(body)
}

fn rewrite_2d(k: &Kernel) -> Option<Vec<Rewrite>> {
    let u = units(k)?;
    let [rowi, coli] = &u.indices[..] else { return None };
    if !u.fixed.is_empty() || u.body.iter().any(|p| matches!(p, Piece::Derived(_))) {
        return None;
    }
    let (hb, wb) = (rowi.bound.as_str(), coli.bound.as_str());
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !ident(hb) || !ident(wb) {
        return None;
    }
    let model = k.model()?;
    let read = model
        .accesses
        .iter()
        .find(|a| a.space == Space::Global && a.kind == AccessKind::Read && stencil_read(&model, a).is_some())?;
    let x = read.base.clone();
    let p = k.param(&x).filter(|p| p.pointer)?;
    if model.accesses.iter().any(|a| a.base == x && a.kind != AccessKind::Read) {
        return None;
    }
    // A window: every loop around the input's reads is short (a few taps), not a contraction's.
    let short = |a: &kernelpro_source::kernel_model::Access| {
        model.loops_of(a).all(|l| l.bound.as_ref().and_then(|b| b.as_constant()).is_some_and(|b| b.abs() <= 32))
    };
    if !model.accesses.iter().filter(|a| a.base == x).all(short) {
        return None;
    }
    // Every read of the input is guarded by a condition naming both bounds (it stays inside the H x W input).
    let names =
        |c: &str| c.split(|ch: char| !ch.is_alphanumeric() && ch != '_').map(str::to_string).collect::<Vec<_>>();
    let guarded = model.accesses.iter().filter(|a| a.base == x).all(|a| {
        model
            .branches_of(a)
            .filter(|b| matches!(b.source, BranchSource::If | BranchSource::Ternary))
            .any(|b| names(&b.condition).iter().any(|w| w == hb) && names(&b.condition).iter().any(|w| w == wb))
    });
    if !guarded {
        return None;
    }
    let edits_of = tile_reads(k, &u, &x, |e| {
        let (a, b) = row_col(k, e, wb)?;
        Some(format!("{a}, {b}"))
    })?;
    let ty = p.base.clone();
    let outer = indent_at(k.text, k.body().start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let ind3 = format!("{ind2}  ");
    let ind4 = format!("{ind3}  ");
    let body = render_body(k, &u, &edits_of, &ind4)?;
    let (t, h) = (TILE_2D, HALO_2D);
    let side = t + 2 * h;
    let (rt, ct) = (rowi.ty.as_str(), coli.ty.as_str());
    let (rn, cn) = (rowi.name.as_str(), coli.name.as_str());
    let text = format!(
        "{{\n{ind}// {t}x{t} output tiles; the input through a shared tile with a halo of {h} on every side (kernelpro StencilTile).\n\
         {prologue}{ind}__shared__ {ty} kp_tile[{side}][{side} + 1];\n\
         {ind}const int kp_tid = (int){BLOCK_TID};\n\
         {ind}const int kp_threads = (int){BLOCK_THREADS};\n\
         {ind}const long long kp_tiles_c = ((long long)({wb}) + {tm1}) / {t};\n\
         {ind}const long long kp_tiles = ((long long)({hb}) + {tm1}) / {t} * kp_tiles_c;\n\
         {ind}for (long long kp_t = (long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z); kp_t < kp_tiles; kp_t += (long long)gridDim.x * gridDim.y * gridDim.z) {{\n\
         {ind2}const long long kp_r0 = kp_t / kp_tiles_c * {t} - {h}, kp_c0 = kp_t % kp_tiles_c * {t} - {h};\n\
         {ind2}__syncthreads();\n\
         {ind2}for (int kp_e = kp_tid; kp_e < {side} * {side}; kp_e += kp_threads) {{\n\
         {ind3}const long long kp_r = kp_r0 + kp_e / {side}, kp_c = kp_c0 + kp_e % {side};\n\
         {ind3}if (kp_r >= 0 && kp_r < (long long)({hb}) && kp_c >= 0 && kp_c < (long long)({wb})) kp_tile[kp_e / {side}][kp_e % {side}] = {x}[kp_r * (long long)({wb}) + kp_c];\n\
         {ind2}}}\n\
         {ind2}__syncthreads();\n\
         {ind2}auto kp_x = [&](long long kp_r, long long kp_c) -> {ty} {{\n\
         {ind3}const long long kp_i = kp_r - kp_r0, kp_j = kp_c - kp_c0;\n\
         {ind3}const bool kp_in = kp_r >= 0 && kp_r < (long long)({hb}) && kp_c >= 0 && kp_c < (long long)({wb});\n\
         {ind3}return kp_in && kp_i >= 0 && kp_i < {side} && kp_j >= 0 && kp_j < {side} ? kp_tile[kp_i][kp_j] : {x}[kp_r * (long long)({wb}) + kp_c];\n\
         {ind2}}};\n\
         {ind2}for (int kp_e = kp_tid; kp_e < {t} * {t}; kp_e += kp_threads) {{\n\
         {ind3}const long long kp_ur = kp_r0 + {h} + kp_e / {t}, kp_uc = kp_c0 + {h} + kp_e % {t};\n\
         {ind3}if (kp_ur >= (long long)({hb}) || kp_uc >= (long long)({wb})) continue;\n\
         {ind3}{{\n\
         {restore}{ind4}const {rt} {rn} = ({rt})(kp_ur);\n\
         {ind4}const {ct} {cn} = ({ct})(kp_uc);\n\
         {body}{ind3}}}\n\
         {ind2}}}\n\
         {ind}}}\n{outer}}}",
        prologue = u.prologue(k, &ind)?,
        restore = u.restore().lines().map(|l| format!("{ind4}{l}\n")).collect::<String>(),
        tm1 = t - 1,
    );
    let mut source = k.text.to_string();
    source.replace_range(k.body().byte_range(), &text);
    let note = format!("2D stencil over ({rn}, {cn}) reading {x} through {t}x{t} shared tiles with a halo of {h}");
    Some(launch_variants(k, &Rewrite { source, note }, &u, Tuning::Tiles { threads: 256, units: t * t }))
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
    let edits_of = tile_reads(k, &u, &x, |e| Some(k.text_of(e).to_string()))?;
    let ty = p.base.clone();
    let outer = indent_at(k.text, k.body().start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let ind3 = format!("{ind2}  ");
    let body = render_body(k, &u, &edits_of, &ind3)?;
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
