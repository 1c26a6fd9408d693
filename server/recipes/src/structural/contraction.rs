//! SIMT register-tiled contractions. A kernel with one thread per output
//! `(i, j)` whose body is declarations (the accumulator and its initial value,
//! e.g. `float acc = b ? b[j] : 0`, row pointers), one dot-product loop
//! `for (p = 0; p < K; ++p) acc += A * B` where `A` names `i` but not `j` and
//! `B` names `j` but not `i`, and an epilogue (the store, a scale, an
//! activation) becomes a 64x64-tiled product: 256 threads each own 4x4
//! outputs, 16-deep slices of both operands go through shared memory, and the
//! user's own operand expressions load them, evaluated with the user's index
//! names re-bound to the tile element (so any layout and any row-pointer
//! spelling works). Each output still adds its products in `p` order from the
//! user's initial value, so results match the original up to FMA contraction.
//! A loop whose range depends on the output (`for (k = i; k <= j; ++k)`
//! under `if (i <= j)`: a triangular product) walks the whole range in the
//! tiles and masks each product to the original's range, so the sums are the
//! same products in the same order.
//! The search also tries 128x128 tiles (8x8 outputs a thread) with one shared
//! buffer an operand and with two (the next slice loads into one while the
//! other is multiplied: one barrier a slice); see [`FORMS`]. An integer sum
//! (an int matmul) is tiled the same way: exact in any order. A float or int
//! sum over the whole range of `p` gets the expert SIMT GEMM forms of
//! [`super::simt_gemm`] instead of the 8x8 ones (register prefetch, 16-byte
//! loads where the layout allows, each under a 256-thread launch of its own).
//! Tiles are walked with a grid stride: correct under any grid of 256-thread (or larger: the extra threads help load)
//! blocks (the user's `(16, 16)` included). 16-bit GEMMs are the CuTe
//! recipe's.

use super::launch::{Tuning, launch_variants};
use super::simt_gemm;
use super::units_text::{UnitsText, render};
use super::{BLOCK_THREADS, BLOCK_TID};
use crate::kernel::Kernel;
use crate::syntax::{descendants, indent_at, single_statement, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::units::recognize::{Piece, Units, declared_in, flat, names_in, strip_parens, units};
use tree_sitter::Node;

pub struct TiledContraction;

const DEPTH: u32 = 16;
const THREADS: u32 = 256;
/// The forms the search tries, as (outputs a thread along each dimension, shared buffers an
/// operand): 64x64 and 128x128 tiles with one buffer, and 128x128 with two (the next 16-deep
/// slice loads while this one is multiplied, as expert SIMT SGEMMs do; one barrier a slice).
/// Under launches where 8x8 cannot run (blocks over 512 threads), 64x64 with one and two buffers.
const FORMS: [(u32, u32); 3] = [(4, 1), (8, 1), (8, 2)];
/// The tile row and column of a thread's output `(kp_a, kp_b)`: runs of 4 neighbouring rows and
/// columns, 64 apart, so that a thread's operands in shared memory are whole 16-byte vectors (one
/// 128-bit load instead of four, and its stores to the output row contiguous).
const TILE_ROW: &str = "(4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2))";
const TILE_COL: &str = "(4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2))";

pub(super) struct Dot<'t> {
    pub(super) acc: String,
    pub(super) acc_ty: String,
    pub(super) p: String,
    pub(super) p_ty: String,
    pub(super) k: String,
    /// The operand that follows `i` (and `p`), and the one that follows `j`.
    pub(super) a: Node<'t>,
    pub(super) b: Node<'t>,
    pub(super) pre: Vec<Node<'t>>,
    pub(super) epilogue: Vec<Node<'t>>,
    /// A triangular or banded product's range of `p` for output `(i, j)`, on the user's names: `(LO,
    /// HI, the if around the loop)`; `None` for `0 <= p < K`.
    pub(super) range: Option<(String, String, Option<String>)>,
}

impl Dot<'_> {
    /// The declarations operand `e` needs (row pointers), re-emitted where it is loaded; `None`
    /// when one of them declares the accumulator.
    pub(super) fn needs(&self, k: &Kernel, e: Node) -> Option<String> {
        let mut out = Vec::new();
        let mut want: Vec<&str> = names_in(k, e);
        for n in self.pre.iter().rev() {
            let names = declared_in(k, *n);
            if names.iter().any(|x| want.contains(&x.as_str())) {
                if names.contains(&self.acc) {
                    return None;
                }
                want.extend(names_in(k, *n));
                out.push(render(k, Piece::Node(*n), &[], "")?);
            }
        }
        out.reverse();
        Some(out.join(" "))
    }

    /// The declarations before the loop, one a line at `deep`, and the epilogue, its statements
    /// joined at `deep`, as the tiles re-emit them for each output.
    pub(super) fn pre_and_epilogue(&self, k: &Kernel, deep: &str) -> Option<(String, String)> {
        let pre: String = self
            .pre
            .iter()
            .map(|n| render(k, Piece::Node(*n), &[], deep).map(|t| format!("{deep}{t}\n")))
            .collect::<Option<_>>()?;
        let epi = self
            .epilogue
            .iter()
            .map(|n| render(k, Piece::Node(*n), &[], deep))
            .collect::<Option<Vec<_>>>()?
            .join(&format!("\n{deep}"));
        Some((pre, epi))
    }

    /// Which `p` count for output `(i, j)`, as a C condition (`(C) && p >= (LO) && p < (HI)`).
    fn mask(&self) -> Option<String> {
        let (lo, hi, guard) = self.range.as_ref()?;
        let p = &self.p;
        let range = format!("{p} >= ({lo}) && {p} < ({hi})");
        Some(match guard {
            Some(g) => format!("({g}) && {range}"),
            None => range,
        })
    }
}

/// A dot-product loop: its counter, type, range and the two operands.
struct DotLoop<'t> {
    p: String,
    p_ty: String,
    /// The first value, as written (`0`, or `i` in a triangular product).
    lo: String,
    /// The exclusive end, as written (`K`, or `j + 1` for `p <= j`).
    hi: String,
    acc: String,
    x: Node<'t>,
    y: Node<'t>,
}

/// `for (T p = LO; p < HI; ++p) acc += A * B;` (or `p <= HI`).
fn dot_loop<'t>(k: &Kernel, f: Node<'t>) -> Option<DotLoop<'t>> {
    let init =
        f.child_by_field_name("initializer").filter(|d| f.kind() == "for_statement" && d.kind() == "declaration")?;
    let decl = init.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let p = k.text_of(decl.child_by_field_name("declarator")?).to_string();
    let p_ty = k.text_of(init.child_by_field_name("type")?).to_string();
    let cond = strip_parens(f.child_by_field_name("condition")?);
    let op = k.text_of(cond.child_by_field_name("operator")?);
    if cond.kind() != "binary_expression"
        || !["<", "<="].contains(&op)
        || k.text_of(cond.child_by_field_name("left")?) != p
    {
        return None;
    }
    let bound = k.text_of(cond.child_by_field_name("right")?).to_string();
    let hi = if op == "<=" { format!("({bound}) + 1") } else { bound };
    let lo = flat(k, decl.child_by_field_name("value")?);
    let step = flat(k, f.child_by_field_name("update")?);
    if ![format!("++{p}"), format!("{p}++"), format!("{p}+=1")].contains(&step) {
        return None;
    }
    let st = single_statement(f.child_by_field_name("body")?)?;
    let a = st.named_child(0).filter(|e| st.kind() == "expression_statement" && e.kind() == "assignment_expression")?;
    let acc = k.text_of(a.child_by_field_name("left").filter(|l| l.kind() == "identifier")?).to_string();
    let right = strip_parens(a.child_by_field_name("right")?);
    let product = match k.text_of(a.child_by_field_name("operator")?) {
        "+=" => right,
        "=" if right.kind() == "binary_expression"
            && k.text_of(right.child_by_field_name("operator")?) == "+"
            && k.text_of(strip_parens(right.child_by_field_name("left")?)) == acc =>
        {
            strip_parens(right.child_by_field_name("right")?)
        }
        _ => return None,
    };
    if product.kind() != "binary_expression" || k.text_of(product.child_by_field_name("operator")?) != "*" {
        return None;
    }
    Some(DotLoop {
        p,
        p_ty,
        lo,
        hi,
        acc,
        x: product.child_by_field_name("left")?,
        y: product.child_by_field_name("right")?,
    })
}

/// Whether `text` names only parameters, `allowed` names and literals (arithmetic, comparisons and
/// logic of them).
fn only_names(k: &Kernel, text: &str, allowed: &[&str]) -> bool {
    text.chars().all(|c| c.is_alphanumeric() || c == '_' || " +-*/()<>=!&|".contains(c))
        && text.split(|c: char| !(c.is_alphanumeric() || c == '_')).all(|w| {
            w.is_empty()
                || w.chars().next().unwrap().is_ascii_digit()
                || allowed.contains(&w)
                || k.param(w).is_some_and(|q| !q.pointer)
        })
}

/// `text` with identifier `name` replaced by `with` (whole words).
fn substitute(text: &str, name: &str, with: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    for ch in text.chars().chain(std::iter::once(' ')) {
        if ch.is_alphanumeric() || ch == '_' {
            word.push(ch);
            continue;
        }
        out.push_str(if word == name { with } else { &word });
        word.clear();
        out.push(ch);
    }
    out.pop();
    out
}

pub(super) fn recognise<'t>(k: &'t Kernel, u: &Units<'t>) -> Option<Dot<'t>> {
    let [i, j] = &u.indices[..] else { return None };
    // The tiles re-emit the epilogue per output without the unit's restore: a parameter the body
    // moves (`C += row * N;`) would move again at every output a thread owns.
    if !u.restored.is_empty() {
        return None;
    }
    let mut pre = Vec::new();
    let mut found = None;
    let mut epilogue = Vec::new();
    let mut guard = None;
    for piece in &u.body {
        let Piece::Node(n) = *piece else { return None };
        if found.is_none() {
            if n.kind() == "declaration" {
                pre.push(n);
                continue;
            }
            // `if (C) for (...)`: a condition on the output around the loop (`if (i <= j)`).
            if let Some((c, inner)) = crate::syntax::guarded(n) {
                guard = Some(k.text_of(c).to_string());
                found = Some(dot_loop(k, inner)?);
            } else {
                found = Some(dot_loop(k, n)?);
            }
            continue;
        }
        if descendants(n).into_iter().any(kernelpro_source::units::recognize::is_loop) {
            return None;
        }
        epilogue.push(n);
    }
    let DotLoop { p, p_ty, lo, hi, acc, x, y } = found?;
    // The range is uniform (`0 <= p < K`), or depends on the output (`i <= p <= j`, under `if (C)`):
    // then every output's tile walks `p` up to the range's end at the last row and column, and a
    // mask keeps the products the loop had (exact: the same products in the same order).
    let ij = [i.name.as_str(), j.name.as_str()];
    let (bound, range) = if lo == "0" && guard.is_none() && only_names(k, &hi, &[]) {
        (hi, None)
    } else {
        if !only_names(k, &lo, &ij)
            || !only_names(k, &hi, &ij)
            || guard.as_ref().is_some_and(|g| !only_names(k, g, &ij))
        {
            return None;
        }
        let last = |t: &str| {
            let t = substitute(t, &i.name, &format!("(({}) - 1)", i.bound));
            substitute(&t, &j.name, &format!("(({}) - 1)", j.bound))
        };
        (last(&hi), Some((lo, hi, guard)))
    };
    // Which pre declarations follow i, j.
    let locals: Vec<(String, Node)> =
        pre.iter().flat_map(|d| declared_in(k, *d).into_iter().map(move |n| (n, *d))).collect();
    let follows = |e: Node, idx: &str| -> bool {
        let mut seen = vec![e];
        let mut at = 0;
        while at < seen.len() {
            let names = names_in(k, seen[at]);
            if names.contains(&idx) {
                return true;
            }
            for (l, d) in &locals {
                if names.contains(&l.as_str()) && !seen.contains(d) {
                    seen.push(*d);
                }
            }
            at += 1;
        }
        false
    };
    let acc_decl = locals.iter().find(|(l, _)| *l == acc)?.1;
    let acc_ty = k.text_of(acc_decl.child_by_field_name("type")?).replace("const ", "").trim().to_string();
    // A template's `T` is what the spec instantiates the buffers of that type with.
    let resolved = k
        .func
        .params
        .iter()
        .find(|q| q.pointer && q.base == acc_ty)
        .and_then(|q| k.buffer_type(&q.name))
        .filter(|_| k.func.is_template);
    // Floating sums, and integer ones (exact in any order: an int matmul).
    const NUMERIC: [&str; 10] =
        ["float", "double", "int", "long", "long long", "unsigned", "unsigned int", "int32_t", "int64_t", "uint32_t"];
    if !NUMERIC.contains(&acc_ty.as_str()) && !resolved.is_some_and(|t| NUMERIC.contains(&t)) {
        return None;
    }
    let (a, b) = match (follows(x, &i.name), follows(x, &j.name), follows(y, &i.name), follows(y, &j.name)) {
        (true, false, false, true) => (x, y),
        (false, true, true, false) => (y, x),
        _ => return None,
    };
    // Operands only load (no writes, no accumulator).
    for e in [a, b] {
        if names_in(k, e).contains(&acc.as_str()) || crate::syntax::has_side_effects(e) {
            return None;
        }
    }
    Some(Dot { acc, acc_ty, p, p_ty, k: bound, a, b, pre, epilogue, range })
}

/// Whether the operand's subscripts put `p` as a plain term (contiguous along `p`).
pub(super) fn contiguous_in(k: &Kernel, e: Node, p: &str) -> bool {
    descendants(e).into_iter().filter(|d| d.kind() == "subscript_expression").any(|s| {
        let idx =
            s.child_by_field_name("indices").and_then(|i| i.named_child(0)).map(|i| flat(k, i)).unwrap_or_default();
        idx.split('+').any(|t| t.trim_matches(|c| c == '(' || c == ')') == p)
    })
}

/// The tiled form with `r`x`r` outputs a thread and `stages` shared buffers an operand: 1 (load,
/// barrier, multiply, barrier) or 2 (the next slice loads into the other buffer while this one is
/// multiplied: one barrier a slice).
fn generate(k: &Kernel, u: &Units, d: &Dot, r: u32, stages: u32) -> Option<String> {
    let tile = 16 * r;
    let [i, j] = &u.indices[..] else { return None };
    let body = k.body();
    let outer = indent_at(k.text, body.start_byte());
    let ind = format!("{outer}  ");
    let deep = format!("{ind}      ");
    let (pre, epi) = d.pre_and_epilogue(k, &deep)?;
    let line = |s: String| {
        if s.is_empty() { s } else { format!("{ind}      {s}\n") }
    };
    let (a_pre, b_pre) = (line(d.needs(k, d.a)?), line(d.needs(k, d.b)?));
    let (t, m, n, kk) = (&d.acc_ty, &i.bound, &j.bound, &d.k);
    let (ti, tj, tp) = (&i.ty, &j.ty, &d.p_ty);
    let (iname, jname, p) = (&i.name, &j.name, &d.p);
    let (ea, eb) = (k.text_of(d.a), k.text_of(d.b));
    let prologue = u.prologue(k, &ind)?;
    let (span, k_first, k_end, whole) = tile_span(d, &ind, (ti, tj, iname, jname), m, n, r);
    // Consecutive threads walk the operand's contiguous axis.
    let order = |contig_p: bool| {
        if contig_p {
            ("kp_e % 16".to_string(), "kp_e / 16".to_string())
        } else {
            (format!("kp_e / {tile}"), format!("kp_e % {tile}"))
        }
    };
    let (a_kk, a_mm) = order(contiguous_in(k, d.a, p));
    let (b_kk, b_nn) = order(contiguous_in(k, d.b, p));
    let plain = "kp_acc[kp_a][kp_b] += kp_x[kp_a] * kp_y[kp_b];".to_string();
    let masked = d.mask().map(|m| {
        format!(
            "{{ const {ti} {iname} = ({ti})(kp_m0 + {TILE_ROW}); const {tj} {jname} = ({tj})(kp_n0 + {TILE_COL}); const {tp} {p} = ({tp})(kp_k0 + kp_kk); if ({m}) kp_acc[kp_a][kp_b] += kp_x[kp_a] * kp_y[kp_b]; }}"
        )
    });
    // One slice of both operands (`DEPTH` deep, from `kv`) into shared buffer `buf` (`[0]`, or `""` with one buffer).
    let load = |kv: &str, buf: &str| {
        format!(
            r#"{ind}    for (int kp_e = kp_tid; kp_e < {DEPTH} * {tile}; kp_e += kp_nt) {{
{ind}      const int kp_kk = {a_kk}, kp_mm = {a_mm};
{ind}      const {ti} {iname} = ({ti})(kp_m0 + kp_mm);
{ind}      const {tp} {p} = ({tp})({kv} + kp_kk);
{a_pre}{ind}      kp_As{buf}[kp_kk][kp_mm] = ({iname} < {m} && {p} < {kk}) ? ({t})({ea}) : ({t})0;
{ind}    }}
{ind}    for (int kp_e = kp_tid; kp_e < {DEPTH} * {tile}; kp_e += kp_nt) {{
{ind}      const int kp_kk = {b_kk}, kp_nn = {b_nn};
{ind}      const {tj} {jname} = ({tj})(kp_n0 + kp_nn);
{ind}      const {tp} {p} = ({tp})({kv} + kp_kk);
{b_pre}{ind}      kp_Bs{buf}[kp_kk][kp_nn] = ({jname} < {n} && {p} < {kk}) ? ({t})({eb}) : ({t})0;
{ind}    }}
"#
        )
    };
    // The products of the slice in shared buffer `buf`, each `fma`.
    let products = |buf: &str, fma: &str| {
        format!(
            r#"{ind}    #pragma unroll
{ind}    for (int kp_kk = 0; kp_kk < {DEPTH}; ++kp_kk) {{
{ind}      {t} kp_x[{r}], kp_y[{r}];
{operands}{ind}      #pragma unroll
{ind}      for (int kp_a = 0; kp_a < {r}; ++kp_a)
{ind}        #pragma unroll
{ind}        for (int kp_b = 0; kp_b < {r}; ++kp_b) {fma}
{ind}    }}
"#,
            operands = operand_loads(&ind, t, r, buf),
        )
    };
    // A masked product masks only the slices where some product of the tile is masked off: where
    // every output counts the whole slice (`whole`), the same products in the same order, unmasked.
    let compute = |buf: &str| {
        let body = match &masked {
            None => products(buf, &plain),
            Some(masked) => format!(
                "{ind}    if ({whole}) {{\n{}{ind}    }} else {{\n{}{ind}    }}\n",
                products(buf, &plain),
                products(buf, masked)
            ),
        };
        format!(
            "{ind}    // Threads past the first {THREADS} (a larger block) only help load the tiles.\n{ind}    if (kp_tid < {THREADS}) {{\n{body}{ind}    }}\n"
        )
    };
    let (buffers, mainloop) = if stages == 2 {
        (
            "[2]",
            format!(
                r#"{span}{ind}  int kp_s = 0;
{ind}  if ({k_first} < {k_end}) {{
{ind}    const long long kp_kn = {k_first};
{first}{ind}  }}
{ind}  __syncthreads();
{ind}  for (long long kp_k0 = {k_first}; kp_k0 < {k_end}; kp_k0 += {DEPTH}) {{
{ind}    // The next slice loads into the other buffer while this one is multiplied (one barrier a slice).
{ind}    if (kp_k0 + {DEPTH} < {k_end}) {{
{ind}    const long long kp_kn = kp_k0 + {DEPTH};
{next}{ind}    }}
{this}{ind}    __syncthreads();
{ind}    kp_s ^= 1;
{ind}  }}
"#,
                first = load("kp_kn", "[0]"),
                next = load("kp_kn", "[kp_s ^ 1]"),
                this = compute("[kp_s]"),
            ),
        )
    } else {
        (
            "",
            format!(
                "{span}{ind}  for (long long kp_k0 = {k_first}; kp_k0 < {k_end}; kp_k0 += {DEPTH}) {{\n{}{ind}    __syncthreads();\n{}{ind}    __syncthreads();\n{ind}  }}\n",
                load("kp_k0", ""),
                compute("")
            ),
        )
    };
    let s = format!(
        r#"{{
{ind}// SIMT register-tiled contraction (kernelpro TiledContraction): {tile}x{tile} tiles, {DEPTH} deep, {r}x{r} outputs a thread, {THREADS} threads a block{staged}.
{prologue}{ind}__shared__ __align__(16) {t} kp_As{buffers}[{DEPTH}][{tile} + 4];
{ind}__shared__ __align__(16) {t} kp_Bs{buffers}[{DEPTH}][{tile} + 4];
{ind}const int kp_tid = (int){BLOCK_TID};
{ind}const int kp_nt = (int)({BLOCK_THREADS});
{ind}const int kp_tr = kp_tid / 16, kp_tc = kp_tid % 16;
{ind}const long long kp_tiles_n = ((long long)({n}) + {tile} - 1) / {tile};
{ind}const long long kp_tiles = ((long long)({m}) + {tile} - 1) / {tile} * kp_tiles_n;
{ind}const long long kp_blocks = {blocks};
{ind}for (long long kp_t = {block}; kp_t < kp_tiles; kp_t += kp_blocks) {{
{ind}  const long long kp_m0 = kp_t / kp_tiles_n * {tile}, kp_n0 = kp_t % kp_tiles_n * {tile};
{ind}  {t} kp_acc[{r}][{r}];
{ind}  #pragma unroll
{ind}  for (int kp_a = 0; kp_a < {r}; ++kp_a) {{
{ind}    #pragma unroll
{ind}    for (int kp_b = 0; kp_b < {r}; ++kp_b) {{
{ind}      const {ti} {iname} = ({ti})(kp_m0 + {TILE_ROW});
{ind}      const {tj} {jname} = ({tj})(kp_n0 + {TILE_COL});
{ind}      kp_acc[kp_a][kp_b] = 0;
{ind}      if ({iname} < {m} && {jname} < {n}) {{
{pre}{deep}kp_acc[kp_a][kp_b] = {acc};
{ind}      }}
{ind}    }}
{ind}  }}
{mainloop}{ind}  // Unrolled so that kp_acc stays in registers (a dynamic index would put it in local memory).
{ind}  if (kp_tid < {THREADS}) {{
{ind}  #pragma unroll
{ind}  for (int kp_a = 0; kp_a < {r}; ++kp_a) {{
{ind}    #pragma unroll
{ind}    for (int kp_b = 0; kp_b < {r}; ++kp_b) {{
{ind}      const {ti} {iname} = ({ti})(kp_m0 + {TILE_ROW});
{ind}      const {tj} {jname} = ({tj})(kp_n0 + {TILE_COL});
{ind}      if (!({iname} < {m} && {jname} < {n})) continue;
{pre}{deep}{acc} = kp_acc[kp_a][kp_b];
{deep}{epi}
{ind}    }}
{ind}  }}
{ind}  }}
{ind}}}
{outer}}}"#,
        acc = d.acc,
        staged = if stages == 2 { ", two shared buffers an operand" } else { "" },
        blocks = u.block_count(),
        block = u.block_index(),
    );
    Some(s)
}

/// A thread's `r` operands of each tile at depth `kp_kk` into `kp_x` and `kp_y`: float4 loads of
/// float tiles (rows are 16-byte aligned: `__align__(16)`, `tile + 4` floats long), element loads
/// of the same places otherwise.
fn operand_loads(ind: &str, t: &str, r: u32, buf: &str) -> String {
    let mut out = String::new();
    for (dst, tile, who, idx, var) in
        [("kp_x", "kp_As", "kp_tr", TILE_ROW, "kp_a"), ("kp_y", "kp_Bs", "kp_tc", TILE_COL, "kp_b")]
    {
        if t == "float" {
            for g in 0..r / 4 {
                let v = format!("kp_{}{g}", &dst[3..]);
                out += &format!(
                    "{ind}      const float4 {v} = *reinterpret_cast<const float4*>(&{tile}{buf}[kp_kk][4 * {who} + {}]);\n",
                    64 * g
                );
                for (q, c) in ["x", "y", "z", "w"].iter().enumerate() {
                    out += &format!("{ind}      {dst}[{}] = {v}.{c};\n", 4 * g + q as u32);
                }
            }
        } else {
            out += &format!(
                "{ind}      #pragma unroll\n{ind}      for (int {var} = 0; {var} < {r}; ++{var}) {dst}[{var}] = {tile}{buf}[kp_kk][{idx}];\n"
            );
        }
    }
    out
}

/// For a masked (triangular, banded) product: the code that finds the span of `p` the block
/// tile's outputs need, and the k loop's first and end values. Each thread takes the min of LO and
/// the max of HI over its outputs (those under the `if`); the k tiles outside are skipped whole, as
/// every product there is masked off (the sums keep their products and order). Also the span every
/// output needs (the max of LO, the min of HI, where every output of the tile is in range and
/// under the `if`): the condition, last, under which a slice from `kp_k0` needs no mask.
fn tile_span(
    d: &Dot,
    ind: &str,
    names: (&str, &str, &str, &str),
    m: &str,
    n: &str,
    r: u32,
) -> (String, String, String, String) {
    let kk = &d.k;
    let Some((lo, hi, guard)) = &d.range else {
        return (String::new(), "0".into(), format!("(long long)({kk})"), "true".into());
    };
    let (ti, tj, iname, jname) = names;
    let when = guard.as_ref().map(|g| format!(" && ({g})")).unwrap_or_default();
    let span = format!(
        r#"{ind}  // The k tiles any output of this tile needs (kernelpro: the rest are masked off whole).
{ind}  __shared__ long long kp_plo, kp_phi, kp_qlo, kp_qhi;
{ind}  __shared__ int kp_some_out;
{ind}  __syncthreads();
{ind}  if (kp_tid == 0) {{ kp_plo = 0x7fffffffffffffffLL; kp_phi = -0x7fffffffffffffffLL; kp_qlo = -0x7fffffffffffffffLL; kp_qhi = 0x7fffffffffffffffLL; kp_some_out = 0; }}
{ind}  __syncthreads();
{ind}  if (kp_tid < {THREADS}) {{
{ind}    long long kp_lo = 0x7fffffffffffffffLL, kp_hi = -0x7fffffffffffffffLL;
{ind}    long long kp_alo = -0x7fffffffffffffffLL, kp_ahi = 0x7fffffffffffffffLL;
{ind}    int kp_out = 0;
{ind}    for (int kp_a = 0; kp_a < {r}; ++kp_a)
{ind}      for (int kp_b = 0; kp_b < {r}; ++kp_b) {{
{ind}        const {ti} {iname} = ({ti})(kp_m0 + {TILE_ROW});
{ind}        const {tj} {jname} = ({tj})(kp_n0 + {TILE_COL});
{ind}        if ({iname} < {m} && {jname} < {n}{when}) {{
{ind}          const long long kp_l = (long long)({lo}), kp_h = (long long)({hi});
{ind}          kp_lo = kp_l < kp_lo ? kp_l : kp_lo;
{ind}          kp_hi = kp_h > kp_hi ? kp_h : kp_hi;
{ind}          kp_alo = kp_l > kp_alo ? kp_l : kp_alo;
{ind}          kp_ahi = kp_h < kp_ahi ? kp_h : kp_ahi;
{ind}        }} else {{
{ind}          kp_out = 1;
{ind}        }}
{ind}      }}
{ind}    if (kp_lo <= kp_hi) {{ atomicMin(&kp_plo, kp_lo); atomicMax(&kp_phi, kp_hi); }}
{ind}    atomicMax(&kp_qlo, kp_alo); atomicMin(&kp_qhi, kp_ahi);
{ind}    if (kp_out) kp_some_out = 1;
{ind}  }}
{ind}  __syncthreads();
{ind}  const long long kp_pfirst = kp_plo, kp_pend = kp_phi;
{ind}  // Slices inside [kp_qlo, kp_qhi) hold only products every output of the tile counts.
{ind}  const bool kp_whole_tile = kp_some_out == 0;
{ind}  const long long kp_wfirst = kp_qlo, kp_wend = kp_qhi;
"#
    );
    (
        span,
        format!("(kp_pfirst > 0 ? kp_pfirst : 0) / {DEPTH} * {DEPTH}"),
        format!("(kp_pend < (long long)({kk}) ? kp_pend : (long long)({kk}))"),
        format!("kp_whole_tile && kp_k0 >= kp_wfirst && kp_k0 + {DEPTH} <= kp_wend"),
    )
}

fn rewrites(k: &Kernel) -> Vec<Rewrite> {
    let Some(u) = units(k) else { return Vec::new() };
    // One index and a row from `blockIdx.y` alone (a pointwise conv's output channel): tile across both.
    let (u, promoted) =
        match kernelpro_source::units::recognize::promote_fixed_y(k, &u).filter(|_| u.indices.len() == 1) {
            Some(p) => (p, true),
            None => (u, false),
        };
    let Some(threads) = k.block_threads() else { return Vec::new() };
    // The 16x16 thread mapping needs 256 threads a block in every launch the search may pick (more only help load).
    let ok = threads.iter().all(|&t| t >= THREADS);
    let Some(d) = recognise(k, &u).filter(|_| ok) else {
        return Vec::new();
    };
    if u.body
        .iter()
        .any(|p| matches!(p, Piece::Node(n) if statements(*n).iter().any(|s| s.kind() == "return_statement")))
    {
        return Vec::new();
    }
    // Each form's rewrite, then each one's launch variants: the forms under the user's launch
    // come first, as the round-robin proposer takes a recipe's rewrites in order.
    // 8x8 outputs a thread take about 100 registers: a block of more than 512 threads cannot launch
    // (the H200 run of 2026-12-06: `mm_rowx`'s 32x32 blocks failed with LAUNCH_OUT_OF_RESOURCES),
    // and every candidate must also run under its own launch.
    let fits = |r: u32| r <= 4 || threads.iter().all(|&t| t <= 512);
    // A 4-byte sum over a uniform range takes the expert SIMT GEMM forms instead of the 8x8 ones
    // (each with a 256-thread launch of its own); 4x4 stays for what its 64x64 tiles suit.
    let forms: Vec<Form> = if simt_gemm::applies(&d) {
        let [big, big2, wide, tall] = simt_gemm::SHAPES;
        vec![Form::Simt(big), Form::Simt(big2), Form::Plain(4, 1), Form::Simt(wide), Form::Simt(tall)]
    } else if fits(8) {
        FORMS.iter().map(|&(r, stages)| Form::Plain(r, stages)).collect()
    } else {
        // Where 8x8 cannot launch (blocks of 1024 threads), 4x4 with two buffers instead.
        vec![Form::Plain(4, 1), Form::Plain(4, 2)]
    };
    let assumed = if promoted {
        format!(
            "; assumes the launch's y extent is `{}`, as the spec's grid has it ({} runs over it whatever the launch)",
            u.indices[0].bound, u.indices[0].name
        )
    } else {
        String::new()
    };
    let per_size: Vec<Vec<Rewrite>> = forms
        .iter()
        .map(|f| match *f {
            Form::Plain(r, stages) => tiled(k, &u, &d, r, stages, &assumed),
            Form::Simt(shape) => simt_gemm::rewrites(k, &u, &d, shape, &assumed),
        })
        .collect();
    let rounds = per_size.iter().map(Vec::len).max().unwrap_or(0);
    (0..rounds).flat_map(|i| per_size.iter().filter_map(move |v| v.get(i).cloned())).collect()
}

/// A form the search tries: this module's `r`x`r` outputs a thread with one or two shared
/// buffers, or the expert SIMT GEMM of one block shape.
enum Form {
    Plain(u32, u32),
    Simt(simt_gemm::Shape),
}

/// The rewrite with `r`x`r` outputs a thread (16r x 16r tiles), and its launch variants.
fn tiled(k: &Kernel, u: &Units, d: &Dot, r: u32, stages: u32, assumed: &str) -> Vec<Rewrite> {
    let tile = 16 * r;
    let Some(mut text) = generate(k, u, d, r, stages) else {
        return Vec::new();
    };
    // Float buffers: a `double` accumulator becomes float (double tiles would halve the tile's reuse).
    let float_acc = k.func.params.iter().all(|p| !p.base.contains("double")) && text.contains("double");
    if float_acc {
        text = super::warp_units::to_float(&text);
    }
    // Two buffers of 8-byte elements would pass the 48 KiB of static shared memory: 4-byte ones only.
    const FOUR_BYTES: [&str; 6] = ["float", "int", "unsigned", "unsigned int", "int32_t", "uint32_t"];
    if stages == 2 && !FOUR_BYTES.iter().any(|ty| text.contains(&format!("__align__(16) {ty} kp_As[2]"))) {
        return Vec::new();
    }
    let mut source = k.text.to_string();
    source.replace_range(k.body().byte_range(), &text);
    let fp = if float_acc { ", double accumulator as float" } else { "" };
    let fp = match d.mask() {
        Some(m) => format!("{fp}, products masked to `{m}`"),
        None => fp.to_string(),
    };
    let note = format!(
        "{tile}x{tile} shared-memory tiles{}, {r}x{r} outputs a thread, over ({}, {}) with {} as the contraction{fp}{assumed}",
        if stages == 2 { " (two buffers)" } else { "" },
        u.indices[0].name,
        u.indices[1].name,
        d.p
    );
    launch_variants(k, &Rewrite { source, note }, u, Tuning::Tiles { threads: THREADS, units: tile * tile })
}

impl Recipe for TiledContraction {
    fn name(&self) -> &'static str {
        "TiledContraction"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::Contraction]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::MissedReuse, Code::SharedMemTiling, Code::UncoalescedAccess, Code::MemoryCoalescing]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        super::with_units_view(text, kernel, rewrites)
    }
}
