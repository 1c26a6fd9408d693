//! The expert SIMT GEMM form of [`super::TiledContraction`] for 4-byte sums (fp32 and int32): a
//! 256-thread block owns a `BM`x`BN` output tile (128x128, 128x64 or 64x128), each thread
//! `BM/16`x`BN/16` outputs as two 4-wide runs a dimension. Each warp covers 4x8 threads of the
//! 16x16 thread grid, so a quarter-warp reads one A vector (a broadcast) and eight consecutive B
//! vectors (no bank conflict) from shared memory. `BK`-deep slices of both operands go through
//! two shared buffers an operand, A stored transposed (`[k][m]`) so that a thread's A values are
//! whole vectors; the next slice is fetched into registers while this one is multiplied, then
//! stored into the other buffer (one barrier a slice).
//!
//! The user's own operand expressions load the tiles, so any layout works. Where an operand is a
//! parameter subscripted by an index that is affine in the tile index and `p` with one of them as
//! a plain term (`A[i*K + p]`, `B[p*N + j]`, `B[j*K + p]`), its loads are 16-byte vectors along
//! that term, when a check of the tile's addresses (16-byte aligned, the other index's stride and
//! the extent along the vector a multiple of 4) holds at run time and the tile's every slice lies
//! inside the problem (then unguarded, which lets ptxas issue the next slice's loads among this
//! one's products); otherwise, and on the problem's edge tiles, the same tile's element loads. Each output adds the same products in `p` order from the user's initial value
//! (FMA contraction aside), and the user's epilogue stores it.

use super::BLOCK_TID;
use super::contraction::{Dot, contiguous_in};
use super::launch::{Tuning, launch_variants};
use super::units_text::UnitsText;
use crate::Rewrite;
use crate::kernel::Kernel;
use crate::syntax::indent_at;
use kernelpro_source::units::recognize::{Units, names_in, strip_parens};
use tree_sitter::Node;

/// Threads a block: a 16x16 grid of threads over the output tile.
pub(super) const THREADS: u32 = 256;

/// A block tile: `bm` x `bn` outputs, `bk`-deep slices (each thread loads whole 16-byte vectors
/// of both slices: `bm * bk` and `bn * bk` are multiples of `4 * THREADS`), and the blocks an SM
/// the kernel's `__launch_bounds__` asks ptxas to fit (`None`: no bound).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Shape {
    pub(super) bm: u32,
    pub(super) bn: u32,
    pub(super) bk: u32,
    pub(super) min_blocks: Option<u32>,
}

/// The shapes the search tries: 128x128 for large products, as ptxas allocates it (140 registers
/// on sm_90 for the naive GEMM of bench/kernels/gemm: one block an SM) and held to 128 registers
/// (two blocks an SM, no spill); 128x64 and 64x128 (more blocks for the SMs, at most 128
/// registers) for smaller ones.
pub(super) const SHAPES: [Shape; 4] = [
    Shape { bm: 128, bn: 128, bk: 8, min_blocks: None },
    Shape { bm: 128, bn: 128, bk: 8, min_blocks: Some(2) },
    Shape { bm: 128, bn: 64, bk: 16, min_blocks: None },
    Shape { bm: 64, bn: 128, bk: 16, min_blocks: None },
];

/// The sums this form takes, with their 16-byte vector type.
const VECTORS: [(&str, &str); 2] = [("float", "float4"), ("int", "int4")];

/// Whether the dot product takes this form: a uniform range of `p` (no mask) and a 4-byte sum.
pub(super) fn applies(d: &Dot) -> bool {
    d.range.is_none() && VECTORS.iter().any(|(t, _)| *t == d.acc_ty)
}

/// One operand's load, as the generator needs it.
struct Operand<'a> {
    /// `A` or `B`: the shared tile `kp_{name}s`, registers `kp_r{name}`, the check `kp_v{name}`.
    name: &'static str,
    /// The tile index it follows (`i` or `j`): its name, type and bound.
    x: &'a str,
    x_ty: &'a str,
    x_bound: &'a str,
    /// The tile's first index (`kp_m0` or `kp_n0`) and width (`bm` or `bn`).
    x0: &'static str,
    width: u32,
    expr: &'a str,
    /// The declarations the expression needs, on one line.
    pre: String,
    /// `Some(true)`: vectors along `p` can be loaded; `Some(false)`: along the tile index.
    vector: Option<bool>,
    /// Whether the operand is contiguous along `p` (consecutive threads' element loads walk it).
    contig_p: bool,
}

/// `e` as the terms of its top-level sum (through parentheses), or as the factors of its
/// top-level product.
fn flatten<'t>(k: &Kernel, e: Node<'t>, op: &str, out: &mut Vec<Node<'t>>) {
    let e = strip_parens(e);
    if e.kind() == "binary_expression"
        && e.child_by_field_name("operator").is_some_and(|o| k.text_of(o) == op)
        && let (Some(l), Some(r)) = (e.child_by_field_name("left"), e.child_by_field_name("right"))
    {
        flatten(k, l, op, out);
        flatten(k, r, op, out);
        return;
    }
    out.push(e);
}

/// The identifier `e` is, through parentheses and casts (`(size_t)row`).
fn bare<'t>(k: &Kernel<'t>, e: Node) -> Option<&'t str> {
    let mut e = strip_parens(e);
    while e.kind() == "cast_expression" {
        e = strip_parens(e.child_by_field_name("value")?);
    }
    (e.kind() == "identifier").then(|| k.text_of(e))
}

/// Along which index operand `e` (following tile index `x` and `p`) can be loaded as 16-byte
/// vectors of `t`: `Some(true)` along `p`, `Some(false)` along `x`. It must be a `t` pointer
/// parameter subscripted by `c + o * S + R` (any order), `c` and `o` being `x` and `p` as plain
/// names and `S`, `R` uniform over the block (scalar parameters, the block's fixed indices in
/// `fixed`, the file's integer constants and literals; no call): the index is then affine and
/// contiguous along `c`, and the run-time check of one tile's addresses holds for all of them,
/// the same in every thread (its branch encloses barriers).
fn vector_axis(k: &Kernel, fixed: &[&str], e: Node, x: &str, p: &str, t: &str) -> Option<bool> {
    let e = strip_parens(e);
    if e.kind() != "subscript_expression" {
        return None;
    }
    let base = bare(k, e.child_by_field_name("argument")?)?;
    k.param(base).filter(|q| q.pointer && q.base == t)?;
    let index = e.child_by_field_name("indices")?.named_child(0)?;
    let constants = kernelpro_source::syntax::Syntax::parse(k.text).map(|s| s.constants()).unwrap_or_default();
    let mut terms = Vec::new();
    flatten(k, index, "+", &mut terms);
    let plain: Vec<&str> = terms.iter().filter_map(|t| bare(k, *t)).filter(|n| *n == x || *n == p).collect();
    let [c] = plain[..] else { return None };
    let o = if c == p { x } else { p };
    let uniform = |n: Node| {
        crate::syntax::descendants(n).iter().all(|d| d.kind() != "call_expression")
            && names_in(k, n)
                .iter()
                .all(|w| k.param(w).is_some_and(|q| !q.pointer) || fixed.contains(w) || constants.contains_key(*w))
    };
    let mut strides = 0;
    for term in terms.iter().filter(|t| bare(k, **t) != Some(c)) {
        if uniform(*term) {
            continue;
        }
        let mut factors = Vec::new();
        flatten(k, *term, "*", &mut factors);
        let (named, rest): (Vec<Node>, Vec<Node>) = factors.into_iter().partition(|f| bare(k, *f) == Some(o));
        if named.len() != 1 || !rest.into_iter().all(uniform) {
            return None;
        }
        strides += 1;
    }
    (strides <= 1).then_some(c == p)
}

/// The expert form's kernel body for shape `s`, `None` where the pieces cannot be re-emitted.
fn generate(k: &Kernel, u: &Units, d: &Dot, s: Shape) -> Option<String> {
    let [i, j] = &u.indices[..] else { return None };
    let (t, vt) = *VECTORS.iter().find(|(t, _)| *t == d.acc_ty)?;
    let Shape { bm, bn, bk, .. } = s;
    let (tm, tn) = (bm / 16, bn / 16);
    let fixed: Vec<&str> = u.fixed.iter().map(|(name, _, _)| name.as_str()).collect();
    let body = k.body();
    let outer = indent_at(k.text, body.start_byte());
    let ind = format!("{outer}  ");
    let deep = format!("{ind}      ");
    let (pre, epi) = d.pre_and_epilogue(k, &deep)?;
    // Operand A follows the first index (rows of the tile), B the second.
    let operand = |name, axis: usize, x0, width, e| {
        let x = &u.indices[axis];
        Some(Operand {
            name,
            x: &x.name,
            x_ty: &x.ty,
            x_bound: &x.bound,
            x0,
            width,
            expr: k.text_of(e),
            pre: d.needs(k, e)?,
            vector: vector_axis(k, &fixed, e, &x.name, &d.p, t),
            contig_p: contiguous_in(k, e, &d.p),
        })
    };
    let a = operand("A", 0, "kp_m0", bm, d.a)?;
    let b = operand("B", 1, "kp_n0", bn, d.b)?;
    let kk = &d.k;
    let (m, n, ti, tj, iname, jname) = (&i.bound, &j.bound, &i.ty, &j.ty, &i.name, &j.name);
    let row = format!("(4 * kp_tr + (kp_a & 3) + {} * (kp_a >> 2))", bm / 2);
    let col = format!("(4 * kp_tc + (kp_b & 3) + {} * (kp_b >> 2))", bn / 2);
    let prologue = u.prologue(k, &ind)?;
    let l = format!("{ind}    ");
    let checks: String = [&a, &b].iter().map(|o| check(o, d, t, &l)).collect();
    let mut operands = String::new();
    for (dst, tile, who, count, width) in [("kp_x", "kp_As", "kp_tr", tm, bm), ("kp_y", "kp_Bs", "kp_tc", tn, bn)] {
        for g in 0..count / 4 {
            let v = format!("{dst}{g}");
            operands += &format!(
                "{ind}      const {vt} {v} = *reinterpret_cast<const {vt}*>(&{tile}[kp_s][kp_kk][4 * {who} + {}]);\n",
                g * width / 2
            );
            for (q, c) in ["x", "y", "z", "w"].iter().enumerate() {
                operands += &format!("{ind}      {dst}[{}] = {v}.{c};\n", 4 * g + q as u32);
            }
        }
    }
    // The main loop with vector loads of the operands in `vec` (each as its check allows) and
    // element loads of the others: one copy a combination, so that each keeps only its own
    // addresses in registers.
    // `whole`: the tile's every load is inside the problem (`kp_whole`), so the loads go unguarded.
    // Guarded, ptxas issued the next slice's loads after the products, just before their stores to
    // shared memory, so each slice waited a whole load latency (4096^3 on an H100: 0.76 of cuBLAS,
    // the same loop unguarded 0.94; bench/probes/gemm_variants.cu).
    let mainloop = |vec: [bool; 2], whole: bool| -> String {
        let ops = [&a, &b];
        let fetch = |into: Option<&str>| -> String {
            ops.iter().zip(vec).map(|(o, v)| fetch(o, v, whole, into, s, d, t, &l)).collect()
        };
        let store = |buf: &str| -> String { ops.iter().zip(vec).map(|(o, v)| store(o, v, s, vt, buf, &l)).collect() };
        let product = format!(
            r#"{ind}    #pragma unroll
{ind}    for (int kp_kk = 0; kp_kk < {bk}; ++kp_kk) {{
{ind}      {t} kp_x[{tm}], kp_y[{tn}];
{operands}{ind}      #pragma unroll
{ind}      for (int kp_a = 0; kp_a < {tm}; ++kp_a)
{ind}        #pragma unroll
{ind}        for (int kp_b = 0; kp_b < {tn}; ++kp_b) kp_acc[kp_a][kp_b] += kp_x[kp_a] * kp_y[kp_b];
{ind}    }}
"#
        );
        let barrier = format!("{ind}    asm volatile(\"bar.sync 1, {THREADS};\" ::: \"memory\");\n");
        if vec == [false, false] {
            // Element loads only (the fallback): each slice straight into buffer 0, then multiplied.
            // Prefetch registers for eight element loads an operand would push the whole kernel's
            // register count (the vector loop's too) far past 128.
            return format!(
                "{ind}  for (long long kp_k0 = 0; kp_k0 < kp_kend; kp_k0 += {bk}) {{\n{ind}    const long long kp_kn = kp_k0;\n{}{barrier}{product}{barrier}{ind}  }}\n",
                fetch(Some("0"))
            );
        }
        format!(
            r#"{ind}  {t} kp_rA[{ra}], kp_rB[{rb}];
{ind}  if (kp_kend > 0) {{
{ind}    const long long kp_kn = 0;
{first}{first_store}{ind}  }}
{barrier}{ind}  for (long long kp_k0 = 0; kp_k0 < kp_kend; kp_k0 += {bk}) {{
{ind}    const bool kp_more = kp_k0 + {bk} < kp_kend;
{ind}    // The next slice's global loads are in flight while this one is multiplied.
{ind}    if (kp_more) {{
{ind}    const long long kp_kn = kp_k0 + {bk};
{first}{ind}    }}
{product}{ind}    // The other buffer was last read before the previous barrier.
{ind}    if (kp_more) {{
{next}{ind}    }}
{barrier}{ind}    kp_s ^= 1;
{ind}  }}
"#,
            ra = bm * bk / THREADS,
            rb = bn * bk / THREADS,
            first = fetch(None),
            first_store = store("0"),
            next = store("kp_s ^ 1"),
        )
    };
    let (va, vb) = (a.vector.is_some(), b.vector.is_some());
    let loops = if va || vb {
        let when = [(va, "kp_vA"), (vb, "kp_vB")].iter().filter(|(v, _)| *v).map(|(_, c)| *c).collect::<Vec<_>>();
        format!(
            "{ind}  if ({} && kp_whole) {{\n{}{ind}  }} else {{\n{}{ind}  }}\n",
            when.join(" && "),
            mainloop([va, vb], true),
            mainloop([false, false], false)
        )
    } else {
        mainloop([false, false], false)
    };
    Some(format!(
        r#"{{
{ind}// SIMT GEMM (kernelpro TiledContraction): {bm}x{bn} tiles, {bk} deep, {tm}x{tn} outputs a thread, {THREADS} threads a block, two shared buffers an operand, the next slice fetched into registers while this one is multiplied.
{prologue}{ind}__shared__ __align__(16) {t} kp_As[2][{bk}][{bm} + 4];
{ind}__shared__ __align__(16) {t} kp_Bs[2][{bk}][{bn} + 4];
{ind}const int kp_tid = (int){BLOCK_TID};
{ind}// A warp is 4x8 threads of the 16x16 grid: one A vector and eight consecutive B vectors a quarter-warp.
{ind}const int kp_warp = kp_tid / 32, kp_lane = kp_tid % 32;
{ind}const int kp_tr = kp_warp / 2 * 4 + kp_lane / 8, kp_tc = kp_warp % 2 * 8 + kp_lane % 8;
{ind}// The tiles take {THREADS} threads: those of a larger block skip them (the named barrier counts {THREADS}).
{ind}const bool kp_on = kp_tid < {THREADS};
{ind}const long long kp_tiles_n = ((long long)({n}) + {bn} - 1) / {bn};
{ind}const long long kp_tiles = ((long long)({m}) + {bm} - 1) / {bm} * kp_tiles_n;
{ind}for (long long kp_t = {block}; kp_on && kp_t < kp_tiles; kp_t += {blocks}) {{
{ind}  const long long kp_m0 = kp_t / kp_tiles_n * {bm}, kp_n0 = kp_t % kp_tiles_n * {bn};
{ind}  {t} kp_acc[{tm}][{tn}];
{ind}  #pragma unroll
{ind}  for (int kp_a = 0; kp_a < {tm}; ++kp_a) {{
{ind}    #pragma unroll
{ind}    for (int kp_b = 0; kp_b < {tn}; ++kp_b) {{
{ind}      const {ti} {iname} = ({ti})(kp_m0 + {row});
{ind}      const {tj} {jname} = ({tj})(kp_n0 + {col});
{ind}      kp_acc[kp_a][kp_b] = 0;
{ind}      if ({iname} < {m} && {jname} < {n}) {{
{pre}{deep}kp_acc[kp_a][kp_b] = {acc};
{ind}      }}
{ind}    }}
{ind}  }}
{ind}  const long long kp_kend = (long long)({kk});
{ind}  // Every slice of this tile inside the problem: its loads need no bounds test.
{ind}  const bool kp_whole = kp_m0 + {bm} <= (long long)({m}) && kp_n0 + {bn} <= (long long)({n}) && kp_kend % {bk} == 0;
{ind}  {{
{checks}{ind}    int kp_s = 0;
{loops}{ind}  }}
{ind}  // Unrolled so that kp_acc stays in registers (a dynamic index would put it in local memory).
{ind}  #pragma unroll
{ind}  for (int kp_a = 0; kp_a < {tm}; ++kp_a) {{
{ind}    #pragma unroll
{ind}    for (int kp_b = 0; kp_b < {tn}; ++kp_b) {{
{ind}      const {ti} {iname} = ({ti})(kp_m0 + {row});
{ind}      const {tj} {jname} = ({tj})(kp_n0 + {col});
{ind}      if (!({iname} < {m} && {jname} < {n})) continue;
{pre}{deep}{acc} = kp_acc[kp_a][kp_b];
{deep}{epi}
{ind}    }}
{ind}  }}
{ind}}}
{outer}}}"#,
        acc = d.acc,
        blocks = u.block_count(),
        block = u.block_index(),
    ))
}

/// The run-time check of an operand's vector loads on this tile (`kp_vA`, `kp_vB`): the tile's
/// first address 16-byte aligned, the other index's stride and the extent along the vector
/// multiples of 4. Element loads only (`false`) where the operand's index is not of that form.
fn check(o: &Operand, d: &Dot, t: &str, l: &str) -> String {
    let v = o.name;
    let Some(along_p) = o.vector else {
        return format!("{l}const bool kp_v{v} = false;\n");
    };
    let (x, xt, x0, p, pt, pre, e) = (o.x, o.x_ty, o.x0, &d.p, &d.p_ty, &o.pre, o.expr);
    let at = |dx: u32, dp: u32| {
        format!("{{ const {xt} {x} = ({xt})({x0} + {dx}); const {pt} {p} = ({pt})({dp}); {pre} return &({e}); }}")
    };
    let (extent, step) = if along_p { (d.k.as_str(), at(1, 0)) } else { (o.x_bound, at(0, 1)) };
    format!(
        r#"{l}const {t}* kp_{v}0 = [&]() -> const {t}* {first}();
{l}const {t}* kp_{v}1 = [&]() -> const {t}* {step}();
{l}const bool kp_v{v} = (long long)({extent}) % 4 == 0 && ((unsigned long long)kp_{v}0 & 15) == 0 && (kp_{v}1 - kp_{v}0) % 4 == 0;
"#,
        first = at(0, 0),
    )
}

/// An operand's slice from `kp_kn` into registers `kp_r{A,B}`: 16-byte vectors where the check
/// holds, else elements (consecutive threads along the operand's contiguous index); zero outside
/// the problem.
#[allow(clippy::too_many_arguments)]
fn fetch(o: &Operand, vector: bool, whole: bool, into: Option<&str>, s: Shape, d: &Dot, t: &str, l: &str) -> String {
    let vt = VECTORS.iter().find(|(e, _)| *e == t).map_or("float4", |(_, v)| *v);
    let (v, x, xt, x0, w, bound, e, pre) = (o.name, o.x, o.x_ty, o.x0, o.width, o.x_bound, o.expr, &o.pre);
    let (p, pt, kk, bk) = (&d.p, &d.p_ty, &d.k, s.bk);
    let regs = w * bk / THREADS;
    let bind = format!(
        "{l}    const {xt} {x} = ({xt})({x0} + kp_xx);\n{l}    const {pt} {p} = ({pt})(kp_kn + kp_kk);\n{}",
        if pre.is_empty() { String::new() } else { format!("{l}    {pre}\n") }
    );
    let inside = format!("{x} < {bound} && {p} < {kk}");
    let guarded = |load: String, zero: String| if whole { load } else { format!("({inside}) ? {load} : {zero}") };
    let (sk, sx) = element_order(o, w, bk);
    let target = match into {
        Some(buf) => format!("kp_{v}s[{buf}][kp_kk][kp_xx]"),
        None => format!("kp_r{v}[kp_q]"),
    };
    let elements = format!(
        r#"{l}  #pragma unroll
{l}  for (int kp_q = 0; kp_q < {regs}; ++kp_q) {{
{l}    const int kp_e = kp_tid + {THREADS} * kp_q;
{l}    const int kp_kk = {sk}, kp_xx = {sx};
{bind}{l}    {target} = {};
{l}  }}
"#,
        guarded(format!("({t})({e})"), format!("({t})0"))
    );
    let Some(along_p) = o.vector.filter(|_| vector) else { return elements };
    let (vk, vx) = vector_order(along_p, w, bk);
    format!(
        r#"{l}  #pragma unroll
{l}  for (int kp_q = 0; kp_q < {vectors}; ++kp_q) {{
{l}    const int kp_e = kp_tid + {THREADS} * kp_q;
{l}    const int kp_kk = {vk}, kp_xx = {vx};
{bind}{l}    const {vt} kp_v = {};
{l}    kp_r{v}[4 * kp_q] = kp_v.x; kp_r{v}[4 * kp_q + 1] = kp_v.y; kp_r{v}[4 * kp_q + 2] = kp_v.z; kp_r{v}[4 * kp_q + 3] = kp_v.w;
{l}  }}
"#,
        guarded(format!("*reinterpret_cast<const {vt}*>(&({e}))"), format!("make_{vt}(0, 0, 0, 0)")),
        vectors = regs / 4,
    )
}

/// Element `kp_e`'s (depth, tile index) in an element load: consecutive threads along the index
/// the operand is contiguous in (`p` where unknown but `p` is a plain term of a subscript).
fn element_order(o: &Operand, w: u32, bk: u32) -> (String, String) {
    if o.vector.unwrap_or(o.contig_p) {
        (format!("kp_e % {bk}"), format!("kp_e / {bk}"))
    } else {
        (format!("kp_e / {w}"), format!("kp_e % {w}"))
    }
}

/// Vector `kp_e`'s first (depth, tile index): four consecutive `p` or tile indices.
fn vector_order(along_p: bool, w: u32, bk: u32) -> (String, String) {
    if along_p {
        (format!("kp_e % {} * 4", bk / 4), format!("kp_e / {}", bk / 4))
    } else {
        (format!("kp_e / {}", w / 4), format!("kp_e % {} * 4", w / 4))
    }
}

/// The registers of an operand's slice into shared buffer `buf`, transposed to `[depth][index]`:
/// a vector along the tile index as one 16-byte store, one along `p` as four.
fn store(o: &Operand, vector: bool, s: Shape, vt: &str, buf: &str, l: &str) -> String {
    let (v, w, bk) = (o.name, o.width, s.bk);
    let regs = w * bk / THREADS;
    let (sk, sx) = element_order(o, w, bk);
    let elements = format!(
        r#"{l}  #pragma unroll
{l}  for (int kp_q = 0; kp_q < {regs}; ++kp_q) {{
{l}    const int kp_e = kp_tid + {THREADS} * kp_q;
{l}    kp_{v}s[{buf}][{sk}][{sx}] = kp_r{v}[kp_q];
{l}  }}
"#
    );
    let Some(along_p) = o.vector.filter(|_| vector) else { return elements };
    let (vk, vx) = vector_order(along_p, w, bk);
    let put = if along_p {
        format!(
            "#pragma unroll\n{l}    for (int kp_c = 0; kp_c < 4; ++kp_c) kp_{v}s[{buf}][kp_kk + kp_c][kp_xx] = kp_r{v}[4 * kp_q + kp_c];"
        )
    } else {
        format!(
            "*reinterpret_cast<{vt}*>(&kp_{v}s[{buf}][kp_kk][kp_xx]) = make_{vt}(kp_r{v}[4 * kp_q], kp_r{v}[4 * kp_q + 1], kp_r{v}[4 * kp_q + 2], kp_r{v}[4 * kp_q + 3]);"
        )
    };
    format!(
        r#"{l}  #pragma unroll
{l}  for (int kp_q = 0; kp_q < {vectors}; ++kp_q) {{
{l}    const int kp_e = kp_tid + {THREADS} * kp_q;
{l}    const int kp_kk = {vk}, kp_xx = {vx};
{l}    {put}
{l}  }}
"#,
        vectors = regs / 4,
    )
}

/// The expert form with shape `s` and its launch variant (256 threads, a block a tile). The form
/// as it is under the user's launch only where every launch the spec may pick has 256 threads:
/// 8x8 outputs a thread take over 100 registers, which a larger block cannot have.
pub(super) fn rewrites(k: &Kernel, u: &Units, d: &Dot, s: Shape, note: &str) -> Vec<Rewrite> {
    let Some(text) = generate(k, u, d, s) else { return Vec::new() };
    let mut source = k.text.to_string();
    source.replace_range(k.body().byte_range(), &text);
    let mut bounds = String::new();
    if let Some(blocks) = s.min_blocks {
        if k.launch_bounds().is_some() {
            return Vec::new();
        }
        // The signature sits before the body: its offsets hold in the rewritten text.
        source.insert_str(k.func.name_byte, &format!("__launch_bounds__({THREADS}, {blocks}) "));
        bounds = format!(", __launch_bounds__({THREADS}, {blocks})");
    }
    let fixed: Vec<&str> = u.fixed.iter().map(|(name, _, _)| name.as_str()).collect();
    let vectors: Vec<&str> = [("A", d.a, &u.indices[0].name), ("B", d.b, &u.indices[1].name)]
        .into_iter()
        .filter(|(_, e, x)| vector_axis(k, &fixed, *e, x, &d.p, &d.acc_ty).is_some())
        .map(|(name, _, _)| name)
        .collect();
    let loads = if vectors.is_empty() {
        "element loads".to_string()
    } else {
        format!("16-byte loads of {} where aligned", vectors.join(" and "))
    };
    let note = format!(
        "{}x{} SIMT GEMM tiles, {} deep, {}x{} outputs a thread, register prefetch, {loads}{bounds}{note}",
        s.bm,
        s.bn,
        s.bk,
        s.bm / 16,
        s.bn / 16
    );
    let mut out =
        launch_variants(k, &Rewrite { source, note }, u, Tuning::Tiles { threads: THREADS, units: s.bm * s.bn });
    let user_fits = k.block_threads().is_some_and(|ts| ts.iter().all(|&t| t == THREADS));
    if !user_fits {
        out.remove(0);
    }
    out
}
