//! [`WindowTile`]: a 2D window over a batch of images (a box filter, a blur: a
//! thread per output `(z, row, col)`, reading the input `x[Z*H*W + A*W + B]`
//! around its own element in short loops whose bounds may be clamped to the
//! image, `max(0, r - R)` / `min(r + R + 1, H)`, with a radius known only at
//! run time) reads its input through a shared tile: each block step loads one
//! image's `T x T` output tile and a halo on every side once, coalesced, and
//! the block's threads compute the tile's outputs, several each. Every read
//! `x[E]` becomes the tile's element when the tile holds it (inside the tile
//! and inside the `H x W` image), the global `x[E]` otherwise, so a radius past
//! the halo costs speed, never correctness. The image size comes from the
//! kernel's guard on its units (`if (c >= W || r >= H) return;`), the batch
//! from its `z` index, and the spec must give the input at least every
//! launched image's `H * W` elements, so the tile loads read nothing outside it.
//! A pooling window (`x[(oy * S + m) * IW + ...]`, the taps under `iy < IH &&
//! ix < IW`) reads an input of its own size: the tile then spans the rows and
//! columns a tile of outputs reads at the stride `S` (a product of the unit's
//! index with a literal or a spec scalar), and the input size comes from the
//! taps' guard. StencilTile's 2D form needs constant loop bounds, a guard on
//! every read and no batch axis; this form reads the window from the addresses.

use super::units_text::render;
use super::{BLOCK_THREADS, BLOCK_TID};
use crate::kernel::Kernel;
use crate::syntax::{compact, descendants, indent_at, statements};
use crate::why_not::NotApplicable;
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::kernel_model::{AccessKind, BranchSource, Space};
use kernelpro_source::units::recognize::{Piece, global_index_axis, strip_parens};
use tree_sitter::Node;

pub struct WindowTile;

/// (output tile side, halo) of each candidate where the launch's block is no tile (a 1D block): a
/// 32x32 tile with a halo for radii up to 4 and up to 8, and a 16x16 one for small images.
const SHAPES: &[(u32, u32)] = &[(32, 4), (32, 8), (16, 4)];

/// The halos guessed where the window's extent is not constant over the spec's launches.
const HALOS: &[u32] = &[4, 8];

/// The block of the launch variants: a warp wide, 8 rows.
const VARIANT_BLOCK: (u32, u32) = (32, 8);

/// Bytes of static shared memory a block may declare.
const STATIC_SHARED: u32 = 48 * 1024;

/// One thread index the kernel declares: (type, name).
type Index = (String, String);

/// A batched 2D window kernel as read from its units, guard and addresses.
struct Window<'t> {
    row: Index,
    col: Index,
    /// The image index (`blockIdx.z * blockDim.z + threadIdx.z`, or `blockIdx.z` alone).
    batch: Option<(Index, bool)>,
    h: String,
    w: String,
    x: String,
    ty: String,
    /// The type tile coordinates are compared in: `int` where the image's height and width are `int`
    /// (a coordinate outside `int` would index outside the image, where the original is undefined).
    coord: &'static str,
    /// The input image's height and width: the units' own, or the bounds the reads' guard names.
    image: (String, String),
    /// How far the window moves per unit along rows and columns (a pooling window's stride).
    strides: (u32, u32),
    /// The per-unit statements, in order.
    body: Vec<Node<'t>>,
    /// Each read `x[E]`: its byte range and the replacement `kp_x(A, B, E)`.
    reads: Vec<(std::ops::Range<usize>, String)>,
    /// Each read's row `A` and the terms of its column `B`.
    taps: Vec<Tap<'t>>,
}

/// A read's row expression and its column's terms.
type Tap<'t> = (Node<'t>, Vec<Node<'t>>);

fn no(reason: impl Into<String>) -> NotApplicable {
    NotApplicable::new(reason)
}

/// `T NAME = <global index on an axis>;` or `T NAME = blockIdx.z;`: (type, name, axis, a block index alone).
fn index_decl(k: &Kernel, st: Node) -> Option<(String, String, char, bool)> {
    if st.kind() != "declaration"
        || st.named_children(&mut st.walk()).filter(|c| c.kind() == "init_declarator").count() != 1
    {
        return None;
    }
    let d = st.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let name = d.child_by_field_name("declarator").filter(|n| n.kind() == "identifier")?;
    let value = d.child_by_field_name("value")?;
    let ty = k.text_of(st.child_by_field_name("type")?).to_string();
    if let Some(axis) = global_index_axis(k.text_of(value)) {
        return Some((ty, k.text_of(name).to_string(), axis, false));
    }
    (compact(k.text, value) == "blockIdx.z").then(|| (ty, k.text_of(name).to_string(), 'z', true))
}

/// `A OP B` split, parentheses stripped.
fn binary<'t>(k: &Kernel, n: Node<'t>) -> Option<(Node<'t>, &'static str, Node<'t>)> {
    let n = strip_parens(n);
    if n.kind() != "binary_expression" {
        return None;
    }
    let op = k.text_of(n.child_by_field_name("operator")?);
    let op = ["||", "&&", ">=", "<=", "<", ">", "+", "*"].into_iter().find(|o| *o == op)?;
    Some((n.child_by_field_name("left")?, op, n.child_by_field_name("right")?))
}

/// The operands of a chain of `op` (`a + b + c`), parentheses stripped.
fn chain<'t>(k: &Kernel, n: Node<'t>, op: &str, out: &mut Vec<Node<'t>>) {
    match binary(k, n) {
        Some((l, o, r)) if o == op => {
            chain(k, l, op, out);
            chain(k, r, op, out);
        }
        _ => out.push(strip_parens(n)),
    }
}

/// `i >= B` or `B <= i` (`out`), or `i < B` / `B > i` (in range), with `i` one of `names`: (i, B).
fn bound_of(k: &Kernel, atom: Node, names: &[&str], out: bool) -> Option<(String, String)> {
    let (l, op, r) = binary(k, atom)?;
    let (lt, rt) = (compact(k.text, l), compact(k.text, r));
    let (fwd, back) = if out { (">=", "<=") } else { ("<", ">") };
    if op == fwd && names.contains(&lt.as_str()) {
        Some((lt, rt))
    } else if op == back && names.contains(&rt.as_str()) {
        Some((rt, lt))
    } else {
        None
    }
}

/// The guard on the units: `if (c >= W || r >= H) return;` (any order) or a last
/// `if (c < W && r < H) { ... }`: the bounds by index name, and the statements it wraps.
/// A guard's bounds by index name, and the statements it wraps (`None` for an early return).
type Guard<'t> = (Vec<(String, String)>, Option<Vec<Node<'t>>>);

fn guard<'t>(k: &Kernel, st: Node<'t>, names: &[&str]) -> Option<Guard<'t>> {
    if st.kind() != "if_statement" || st.child_by_field_name("alternative").is_some() {
        return None;
    }
    let cond = st.child_by_field_name("condition")?.named_child(0)?;
    let then = st.child_by_field_name("consequence")?;
    let returns = |n: Node| {
        n.kind() == "return_statement" && n.named_child_count() == 0
            || n.kind() == "compound_statement"
                && statements(n).len() == 1
                && statements(n)[0].kind() == "return_statement"
                && statements(n)[0].named_child_count() == 0
    };
    let (op, out) = if returns(then) { ("||", true) } else { ("&&", false) };
    let mut atoms = Vec::new();
    chain(k, cond, op, &mut atoms);
    let bounds: Vec<(String, String)> = atoms.iter().map(|a| bound_of(k, *a, names, out)).collect::<Option<_>>()?;
    if out {
        Some((bounds, None))
    } else {
        (then.kind() == "compound_statement").then(|| (bounds, Some(statements(then))))
    }
}

/// Whether `name` is assigned or incremented anywhere under `n`.
pub(super) fn written(k: &Kernel, n: Node, name: &str) -> bool {
    descendants(n).into_iter().any(|d| {
        let target = match d.kind() {
            "assignment_expression" => d.child_by_field_name("left"),
            "update_expression" => d.child_by_field_name("argument"),
            _ => None,
        };
        target.is_some_and(|t| compact(k.text, strip_parens(t)) == name)
    })
}

fn recognise<'t>(k: &'t Kernel<'t>) -> Result<Window<'t>, NotApplicable> {
    let sts = statements(k.body());
    let mut indices: Vec<(String, String, char, bool)> = Vec::new();
    let mut pre: Vec<Node> = Vec::new();
    let mut at = 0;
    // Index declarations and other declarations, up to the guard.
    let mut found = None;
    while at < sts.len() {
        let st = sts[at];
        at += 1;
        if let Some(i) = index_decl(k, st) {
            indices.push(i);
            continue;
        }
        let names: Vec<&str> = indices.iter().map(|i| i.1.as_str()).collect();
        if let Some(g) = guard(k, st, &names) {
            found = Some(g);
            break;
        }
        if st.kind() != "declaration" {
            return Err(no("no guard `if (col >= W || row >= H) return;` bounds the units before other statements"));
        }
        pre.push(st);
    }
    let Some((bounds, wrapped)) = found else {
        return Err(no("the units have no guard naming the image's height and width"));
    };
    let on = |axis: char| indices.iter().find(|i| i.2 == axis && !i.3);
    let (Some(col), Some(row)) = (on('x'), on('y')) else {
        return Err(no("the kernel has no (row, col) thread indices on y and x"));
    };
    let batch = indices.iter().find(|i| i.2 == 'z');
    if indices.len() != 2 + usize::from(batch.is_some()) {
        return Err(no("the kernel declares more thread indices than a row, a column and an image"));
    }
    let bound = |n: &str| bounds.iter().find(|b| b.0 == n).map(|b| b.1.clone());
    let (Some(h), Some(w)) = (bound(&row.1), bound(&col.1)) else {
        return Err(no("the guard does not bound both the row and the column"));
    };
    if bounds.len() != 2 {
        return Err(no("the guard bounds more than the row and the column"));
    }
    let ident = |s: &str| k.param(s).is_some_and(|p| !p.pointer);
    if !ident(&h) || !ident(&w) {
        return Err(no("the image's height and width are not scalar parameters"));
    }
    let mut body: Vec<Node> = pre;
    match wrapped {
        Some(inner) if at == sts.len() => body.extend(inner),
        Some(_) => return Err(no("statements follow the guard's block")),
        None => body.extend(sts[at..].iter().copied()),
    }
    for st in &body {
        let text = k.text_of(*st);
        if let Some(b) = kernelpro_source::units::recognize::THREAD_BOUND.iter().find(|b| text.contains(**b)) {
            return Err(no(format!("a per-unit statement names `{b}`, which ties it to the original thread mapping")));
        }
    }
    let names = [row.1.as_str(), col.1.as_str(), h.as_str(), w.as_str()];
    let fixed: Vec<&str> = names.into_iter().chain(batch.map(|b| b.1.as_str())).collect();
    if let Some(n) = fixed.iter().find(|n| body.iter().any(|st| written(k, *st, n))) {
        return Err(no(format!("`{n}` is changed inside a unit")));
    }
    // The input: a read-only global buffer the model sees read inside the window's loops, each read
    // `x[Z*H*W + A*W + B]` with A around the unit's row and B around its column.
    let model = k.model().ok_or_else(|| no("the kernel model does not read this kernel"))?;
    let mut inputs: Vec<String> = Vec::new();
    for a in &model.accesses {
        if a.space == Space::Global
            && a.kind == AccessKind::Read
            && model.loops_of(a).next().is_some()
            && !inputs.contains(&a.base)
        {
            inputs.push(a.base.clone());
        }
    }
    let around = (depends_on(k, &body, &row.1), depends_on(k, &body, &col.1));
    let mut why = no("no global input is read inside a loop (a window)");
    let mut found = None;
    'inputs: for x in inputs {
        // The input image: the units' own (an output per input element), else two scalars its reads'
        // guard bounds (`in_y < H && in_x < W`: a pooling window's input).
        let mut images = vec![(h.clone(), w.clone())];
        let guards: Vec<String> = model
            .accesses
            .iter()
            .filter(|a| a.base == x)
            .flat_map(|a| {
                model
                    .branches_of(a)
                    .filter(|b| matches!(b.source, BranchSource::If | BranchSource::Ternary))
                    .map(|b| b.condition.clone())
            })
            .collect();
        // The height is what the guard bounds a row coordinate by, the width a column coordinate.
        let bounds = upper_bounds(k, &guards);
        let of = |deps: &[String]| {
            bounds.iter().filter(|(v, _)| deps.contains(v)).map(|(_, b)| b.clone()).collect::<Vec<_>>()
        };
        for ih in of(&around.0) {
            for iw in of(&around.1) {
                if ih != iw && !images.contains(&(ih.clone(), iw.clone())) {
                    images.push((ih.clone(), iw.clone()));
                }
            }
        }
        for (ih, iw) in images {
            match input(k, &model, &body, &x, (&ih, &iw), batch.map(|b| b.1.as_str()), &around) {
                Ok(r) => {
                    found = Some((x, r, (ih, iw)));
                    break 'inputs;
                }
                Err(e) => why = e,
            }
        }
    }
    let (x, (reads, taps), image) = found.ok_or(why)?;
    // The tile is loaded before the units run: the input's size may not change under them.
    if let Some(n) = [&image.0, &image.1].into_iter().find(|n| body.iter().any(|st| written(k, *st, n))) {
        return Err(no(format!("`{n}` is changed inside a unit")));
    }
    let launches = k.all_launches().ok_or_else(|| no("no launch spec gives the image sizes"))?;
    let strides = (stride(k, &body, &row.1, &launches), stride(k, &body, &col.1, &launches));
    let p = k.param(&x).filter(|p| p.pointer).ok_or_else(|| no(format!("`{x}` is not a pointer parameter")))?;
    let coord = if [&h, &w, &image.0, &image.1].iter().all(|n| k.param(n).is_some_and(|p| p.base == "int")) {
        "int"
    } else {
        "long long"
    };
    Ok(Window {
        coord,
        image,
        strides,
        row: (row.0.clone(), row.1.clone()),
        col: (col.0.clone(), col.1.clone()),
        batch: batch.map(|b| ((b.0.clone(), b.1.clone()), b.3)),
        h,
        w,
        x: x.clone(),
        ty: p.base.clone(),
        body,
        reads,
        taps,
    })
}

/// The names under `body` whose value follows `seed`'s: declared from it (`int rr = r + dr;`), or
/// a loop counter whose start or bound names it (`for (j = max(0, r - R); j < min(r + R + 1, H); j++)`).
fn depends_on(k: &Kernel, body: &[Node], seed: &str) -> Vec<String> {
    let mut deps = vec![seed.to_string()];
    let mentions = |n: Node, deps: &[String]| {
        descendants(n).iter().any(|d| d.kind() == "identifier" && deps.iter().any(|x| x == k.text_of(*d)))
    };
    loop {
        let before = deps.len();
        for d in body.iter().flat_map(|st| descendants(*st)) {
            let (name, from) = match d.kind() {
                "init_declarator" => (d.child_by_field_name("declarator"), d.child_by_field_name("value")),
                "for_statement" => {
                    let var = d
                        .child_by_field_name("initializer")
                        .and_then(|i| i.child_by_field_name("declarator"))
                        .and_then(|i| i.child_by_field_name("declarator"));
                    (var, d.child_by_field_name("condition").filter(|c| mentions(*c, &deps)))
                }
                _ => (None, None),
            };
            if let (Some(n), Some(v)) = (name, from)
                && n.kind() == "identifier"
                && mentions(v, &deps)
                && !deps.iter().any(|x| x == k.text_of(n))
            {
                deps.push(k.text_of(n).to_string());
            }
        }
        if deps.len() == before {
            return deps;
        }
    }
}

/// The names conditions keep below a scalar parameter (`i < NAME`, `NAME > i`), with that parameter, in order.
fn upper_bounds(k: &Kernel, conditions: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for c in conditions {
        for atom in c.split("&&") {
            let atom = atom.trim().trim_start_matches('(').trim_end_matches(')');
            let (var, name) = match (atom.split_once('<'), atom.split_once('>')) {
                (Some((a, b)), None) if !b.starts_with('=') => (a.trim(), b.trim()),
                (None, Some((a, b))) if !b.starts_with('=') => (b.trim(), a.trim()),
                _ => continue,
            };
            let pair = (var.to_string(), name.to_string());
            if k.param(name).is_some_and(|p| !p.pointer) && !out.contains(&pair) {
                out.push(pair);
            }
        }
    }
    out
}

/// How far the window moves per unit `u`: `F` of a product `u * F` in the body (a literal, or a scalar
/// parameter every launch gives one value of), else 1. A wrong guess costs speed, never correctness.
fn stride(k: &Kernel, body: &[Node], u: &str, launches: &[kernelpro_spec::LaunchSpec]) -> u32 {
    for d in body.iter().flat_map(|st| descendants(*st)) {
        let Some((l, op, r)) = binary(k, d) else { continue };
        if op != "*" {
            continue;
        }
        let other = match (compact(k.text, l) == u, compact(k.text, r) == u) {
            (true, false) => compact(k.text, r),
            (false, true) => compact(k.text, l),
            _ => continue,
        };
        let value = other.parse::<i64>().ok().or_else(|| {
            let values: Vec<Option<i64>> = launches.iter().map(|l| scalar(l, &other)).collect();
            values.windows(2).all(|w| w[0] == w[1]).then(|| values.first().copied().flatten()).flatten()
        });
        if let Some(v) = value.filter(|v| (1..=4).contains(v)) {
            return v as u32;
        }
    }
    1
}

/// Integer scalar argument `name` of a launch.
fn scalar(l: &kernelpro_spec::LaunchSpec, name: &str) -> Option<i64> {
    l.int_scalars().into_iter().find_map(|(n, v)| (n == name).then_some(v))
}

/// The reads of input `x` when it is the window's: read only, never moved, only through subscripts
/// `x[Z*H*W + A*W + B]` with `A` following the unit's row alone and `B` its column alone.
fn input<'t>(
    k: &Kernel,
    model: &kernelpro_source::kernel_model::KernelModel,
    body: &[Node<'t>],
    x: &str,
    (h, w): (&str, &str),
    z: Option<&str>,
    (rows, cols): &(Vec<String>, Vec<String>),
) -> Result<Reads<'t>, NotApplicable> {
    if k.param(x).is_none_or(|p| !p.pointer) {
        return Err(no(format!("`{x}` is not a pointer parameter")));
    }
    if model.accesses.iter().any(|a| a.base == x && a.kind != AccessKind::Read) {
        return Err(no(format!("`{x}` is written as well as read")));
    }
    if body.iter().any(|st| written(k, *st, x)) {
        return Err(no(format!("the pointer `{x}` is moved inside a unit")));
    }
    let reads = reads_of(k, body, x, h, w, z, (rows, cols))?;
    if descendants(k.body()).iter().filter(|d| d.kind() == "identifier" && k.text_of(**d) == x).count() != reads.0.len()
    {
        return Err(no(format!("`{x}` is used other than by subscripts in the units")));
    }
    Ok(reads)
}

/// Every `x[E]` under the body with `E = [Z*H*W +] A*W + B` (terms and factors in any order, no
/// side effects): its range and the tile read `kp_x(A, B, E)`.
/// The reads' edits and their taps.
type Reads<'t> = (Vec<(std::ops::Range<usize>, String)>, Vec<Tap<'t>>);

fn reads_of<'t>(
    k: &Kernel,
    body: &[Node<'t>],
    x: &str,
    h: &str,
    w: &str,
    z: Option<&str>,
    (row_deps, col_deps): (&[String], &[String]),
) -> Result<Reads<'t>, NotApplicable> {
    let mut out = Vec::new();
    let mut taps = Vec::new();
    let names = |text: &str, of: &[String]| {
        text.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| of.iter().any(|n| n == w))
    };
    for d in body.iter().flat_map(|st| descendants(*st)) {
        if d.kind() != "identifier" || k.text_of(d) != x {
            continue;
        }
        let sub = d
            .parent()
            .filter(|s| s.kind() == "subscript_expression" && s.child_by_field_name("argument") == Some(d))
            .ok_or_else(|| no(format!("`{x}` is used other than by a subscript")))?;
        let e = sub
            .child_by_field_name("indices")
            .and_then(|i| i.named_child(0))
            .ok_or_else(|| no("a subscript without an index"))?;
        if descendants(e).iter().any(|n| {
            matches!(n.kind(), "assignment_expression" | "update_expression" | "call_expression" | "comma_expression")
                || (n.kind() == "identifier" && k.text_of(*n) == x)
        }) {
            return Err(no(format!("an index of `{x}` has side effects")));
        }
        let mut terms = Vec::new();
        chain(k, e, "+", &mut terms);
        let (mut batch, mut row, mut cols, mut col_terms) = (0, None, Vec::new(), Vec::new());
        for t in terms {
            let mut factors = Vec::new();
            chain(k, t, "*", &mut factors);
            let mut texts: Vec<String> = factors.iter().map(|f| compact(k.text, *f)).collect();
            texts.sort();
            let mut image: Vec<String> = z.into_iter().chain([h, w]).map(str::to_string).collect();
            image.sort();
            if z.is_some() && texts == image {
                batch += 1;
            } else if let [a, b] = factors[..]
                && row.is_none()
                && (compact(k.text, a) == w || compact(k.text, b) == w)
            {
                let other = if compact(k.text, b) == w { a } else { b };
                row = Some((k.text_of(other).to_string(), other));
            } else {
                cols.push(k.text_of(t).to_string());
                col_terms.push(t);
            }
        }
        let Some((row, row_node)) = row else {
            return Err(no(format!("a read of `{x}` is not `row * {w} + col`")));
        };
        if batch != usize::from(z.is_some()) || cols.is_empty() {
            return Err(no(format!(
                "a read of `{x}` is not inside its unit's image (`z * {h} * {w} + row * {w} + col`)"
            )));
        }
        let col = cols.join(") + (");
        if !names(&row, row_deps) || names(&row, col_deps) || !names(&col, col_deps) || names(&col, row_deps) {
            return Err(no(format!(
                "a read of `{x}` is not around its unit (its row from the unit's row alone, its column from the column alone)"
            )));
        }
        // A read through `__ldg(&x[E])` (a micro rewrite before this one) is the read; any other
        // address taken is not a read the tile can stand for.
        let mut at = sub.byte_range();
        if let Some(addr) = sub.parent().filter(|p| p.kind() == "pointer_expression") {
            let call = addr
                .parent()
                .filter(|a| a.kind() == "argument_list" && a.named_child_count() == 1)
                .and_then(|a| a.parent())
                .filter(|c| {
                    c.kind() == "call_expression"
                        && c.child_by_field_name("function").is_some_and(|f| k.text_of(f) == "__ldg")
                });
            match call {
                Some(c) if k.text_of(addr).starts_with('&') => at = c.byte_range(),
                _ => return Err(no(format!("the address of a read of `{x}` is taken"))),
            }
        }
        out.push((at, format!("kp_x(({row}), ({col}), ({}))", k.text_of(e))));
        taps.push((row_node, col_terms));
    }
    if out.is_empty() {
        return Err(no(format!("the units do not read `{x}`")));
    }
    Ok((out, taps))
}

/// The spec gives the input every launched image: at least `images * H * W` elements in every launch.
fn fits(k: &Kernel, win: &Window) -> Result<(), NotApplicable> {
    let launches = k.all_launches().ok_or_else(|| no("no launch spec gives the image sizes"))?;
    for l in &launches {
        let (Some(h), Some(w)) = (scalar(l, &win.image.0), scalar(l, &win.image.1)) else {
            return Err(no("the spec does not give the image's height and width"));
        };
        let images = match &win.batch {
            Some((_, true)) => l.grid[2] as i64,
            Some((_, false)) => l.grid[2] as i64 * l.block[2] as i64,
            None => 1,
        };
        let count = l.buffers().find(|b| b.name == win.x).map(|b| b.count as i64);
        if h <= 0 || w <= 0 || count.is_none_or(|c| c < images * h * w) {
            return Err(no(format!("the spec's `{}` holds fewer than the launched images' elements", win.x)));
        }
    }
    Ok(())
}

fn generate(k: &Kernel, win: &Window, (th, tw): (u32, u32), halo: u32, sep: Option<&Separable>) -> Option<String> {
    let outer = indent_at(k.text, k.body().start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let ind3 = format!("{ind2}  ");
    let ind4 = format!("{ind3}  ");
    let mut body = String::new();
    for st in &win.body {
        if let Some(sep) = sep.filter(|s| s.nest.id() == st.id()) {
            body.push_str(&format!("{ind4}{} += kp_window((int)(kp_ur - kp_u0), (int)(kp_uc - kp_v0));\n", sep.acc));
            continue;
        }
        let edits: Vec<_> =
            win.reads.iter().filter(|(r, _)| r.start >= st.start_byte() && r.end <= st.end_byte()).cloned().collect();
        body.push_str(&format!("{ind4}{}\n", render(k, Piece::Node(*st), &edits, &ind4)?));
    }
    let (x, ty, h, w) = (&win.x, &win.ty, &win.h, &win.w);
    let (ih, iw) = (&win.image.0, &win.image.1);
    let (sr, sc) = win.strides;
    // The input rows and columns a tile's outputs read: the window moves by the stride per output.
    let (side_r, side_c) = ((th - 1) * sr + 1 + 2 * halo, (tw - 1) * sc + 1 + 2 * halo);
    // Each block step: one image's tile. The images of a block are its own z threads' (or its z block's).
    let (images, image, rebind_z, base) = match &win.batch {
        Some(((zt, zn), fixed)) => {
            let (images, first) = if *fixed {
                ("1LL", "(long long)blockIdx.z")
            } else {
                ("(long long)blockDim.z", "(long long)blockIdx.z * blockDim.z")
            };
            (
                images.to_string(),
                format!("{first} + kp_t / kp_per_image"),
                format!("{ind4}const {zt} {zn} = ({zt})(kp_z);\n"),
                format!("kp_z * (long long)({ih}) * (long long)({iw}) + "),
            )
        }
        None => ("1LL".to_string(), "0LL".to_string(), String::new(), String::new()),
    };
    let (start, stride) = if win.batch.is_some() {
        ("(long long)blockIdx.x + (long long)gridDim.x * blockIdx.y", "(long long)gridDim.x * gridDim.y")
    } else {
        (
            "(long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)",
            "(long long)gridDim.x * gridDim.y * gridDim.z",
        )
    };
    let ((rt, rn), (ct, cn)) = (&win.row, &win.col);
    // The separable form: the tile zero outside the image (the window's taps there are skipped), each
    // tile row's window sums, then each output's sum of its column of them.
    let ks = 2 * halo + 1;
    let (zero, rows_decl, rows_pass, window) = match sep {
        None => Default::default(),
        Some(_) => (
            format!(" else kp_tile[kp_e / {side_c}][kp_e % {side_c}] = ({ty})0;"),
            format!("{ind}__shared__ {ty} kp_rows[{side_r}][{tw} + 1];\n"),
            format!(
                "{ind2}for (int kp_e = kp_tid; kp_e < {side_r} * {tw}; kp_e += kp_threads) {{\n\
                 {ind3}{ty} kp_s = ({ty})0;\n\
                 {ind3}for (int kp_d = 0; kp_d < {ks}; ++kp_d) kp_s += kp_tile[kp_e / {tw}][kp_e % {tw} + kp_d];\n\
                 {ind3}kp_rows[kp_e / {tw}][kp_e % {tw}] = kp_s;\n\
                 {ind2}}}\n\
                 {ind2}__syncthreads();\n"
            ),
            format!(
                "{ind2}auto kp_window = [&](int kp_a, int kp_b) -> {ty} {{\n\
                 {ind3}{ty} kp_s = ({ty})0;\n\
                 {ind3}for (int kp_d = 0; kp_d < {ks}; ++kp_d) kp_s += kp_rows[kp_a + kp_d][kp_b];\n\
                 {ind3}return kp_s;\n\
                 {ind2}}};\n"
            ),
        ),
    };
    Some(format!(
        "{{\n{ind}// {th}x{tw} output tiles of one image each; the input through a shared tile with a halo of {halo} on every side (kernelpro WindowTile).\n\
         {ind}__shared__ {ty} kp_tile[{side_r}][{side_c} + 1];\n\
{rows_decl}\
         {ind}const int kp_tid = (int){BLOCK_TID};\n\
         {ind}const int kp_threads = (int){BLOCK_THREADS};\n\
         {ind}const long long kp_tiles_c = ((long long)({w}) + {twm1}) / {tw};\n\
         {ind}const long long kp_per_image = ((long long)({h}) + {thm1}) / {th} * kp_tiles_c;\n\
         {ind}for (long long kp_t = {start}; kp_t < kp_per_image * {images}; kp_t += {stride}) {{\n\
         {ind2}const long long kp_z = {image};\n\
         {ind2}const long long kp_u0 = kp_t % kp_per_image / kp_tiles_c * {th}, kp_v0 = kp_t % kp_tiles_c * {tw};\n\
         {ind2}const long long kp_r0 = kp_u0 * {sr} - {halo}, kp_c0 = kp_v0 * {sc} - {halo};\n\
         {ind2}__syncthreads();\n\
         {ind2}for (int kp_e = kp_tid; kp_e < {side_r} * {side_c}; kp_e += kp_threads) {{\n\
         {ind3}const long long kp_r = kp_r0 + kp_e / {side_c}, kp_c = kp_c0 + kp_e % {side_c};\n\
         {ind3}if (kp_r >= 0 && kp_r < (long long)({ih}) && kp_c >= 0 && kp_c < (long long)({iw})) kp_tile[kp_e / {side_c}][kp_e % {side_c}] = {x}[{base}kp_r * (long long)({iw}) + kp_c];{zero}\n\
         {ind2}}}\n\
         {ind2}__syncthreads();\n\
{rows_pass}\
         {ind2}// The tile's element where it holds (row, col) of this image (where the tile and the image overlap), else the read as written.\n\
         {ind2}const {ct_} kp_rlo = ({ct_})(kp_r0 < 0 ? 0 : kp_r0), kp_clo = ({ct_})(kp_c0 < 0 ? 0 : kp_c0);\n\
         {ind2}const {ct_} kp_rhi = ({ct_})(kp_r0 + {side_r} < (long long)({ih}) ? kp_r0 + {side_r} : (long long)({ih}));\n\
         {ind2}const {ct_} kp_chi = ({ct_})(kp_c0 + {side_c} < (long long)({iw}) ? kp_c0 + {side_c} : (long long)({iw}));\n\
         {ind2}const {ct_} kp_ri = ({ct_})kp_r0, kp_ci = ({ct_})kp_c0;\n\
         {ind2}auto kp_x = [&]({ct_} kp_r, {ct_} kp_c, long long kp_at) -> {ty} {{\n\
         {ind3}return kp_r >= kp_rlo && kp_r < kp_rhi && kp_c >= kp_clo && kp_c < kp_chi ? kp_tile[kp_r - kp_ri][kp_c - kp_ci] : {x}[kp_at];\n\
         {ind2}}};\n\
{window}\
         {ind2}for (int kp_e = kp_tid; kp_e < {th} * {tw}; kp_e += kp_threads) {{\n\
         {ind3}const long long kp_ur = kp_u0 + kp_e / {tw}, kp_uc = kp_v0 + kp_e % {tw};\n\
         {ind3}if (kp_ur >= (long long)({h}) || kp_uc >= (long long)({w})) continue;\n\
         {ind3}{{\n\
         {rebind_z}{ind4}const {rt} {rn} = ({rt})(kp_ur);\n\
         {ind4}const {ct} {cn} = ({ct})(kp_uc);\n\
         {body}{ind3}}}\n\
         {ind2}}}\n\
         {ind}}}\n{outer}}}",
        thm1 = th - 1,
        twm1 = tw - 1,
        ct_ = win.coord,
    ))
}

/// A closed range of integer values.
type Span = (i64, i64);

/// Where the window's extent is worked out: the unit's row and column, and every image side, far
/// from each other and from 0, so no clamp to the image binds.
const AT: i64 = 1 << 20;
const FAR: i64 = 1 << 26;

/// The values the window's index expressions take at one unit: loop counters over their bounds,
/// locals declared once from their values, scalars every launch of the spec gives one value, the
/// file's integer macros.
struct Extent<'a, 't> {
    k: &'a Kernel<'a>,
    body: &'a [Node<'t>],
    fixed: Vec<(String, Span)>,
    launches: &'a [kernelpro_spec::LaunchSpec],
    macros: kernelpro_source::kernel_model::Macros,
}

impl<'a, 't> Extent<'a, 't> {
    fn new(
        k: &'a Kernel<'a>,
        body: &'a [Node<'t>],
        fixed: Vec<(String, Span)>,
        launches: &'a [kernelpro_spec::LaunchSpec],
    ) -> Self {
        let macros = kernelpro_source::parse_tree(k.text)
            .map(|t| kernelpro_source::kernel_model::Macros::collect(&t, k.text))
            .unwrap_or_default();
        Extent { k, body, fixed, launches, macros }
    }
}

impl Extent<'_, '_> {
    fn name(&self, n: &str, depth: u32) -> Option<Span> {
        if let Some((_, s)) = self.fixed.iter().find(|(f, _)| f == n) {
            return Some(*s);
        }
        let k = self.k;
        let mut defs = Vec::new();
        for d in self.body.iter().flat_map(|st| descendants(*st)) {
            match d.kind() {
                "init_declarator" if d.child_by_field_name("declarator").is_some_and(|v| k.text_of(v) == n) => {
                    // A loop's counter is read from its loop; any other local from its value.
                    let of_loop = d.parent().and_then(|p| p.parent()).filter(|f| f.kind() == "for_statement");
                    defs.push(match of_loop {
                        Some(f) => self.counter(f, n, depth),
                        None => d.child_by_field_name("value").and_then(|v| self.span(v, depth + 1)),
                    });
                }
                _ => {}
            }
        }
        match defs[..] {
            [one] => one.filter(|_| !self.body.iter().any(|st| written_outside_update(k, *st, n))),
            [] if k.param(n).is_some_and(|p| !p.pointer) => {
                let values: Vec<Option<i64>> = self.launches.iter().map(|l| scalar(l, n)).collect();
                let v = values.first().copied().flatten()?;
                values.iter().all(|x| *x == Some(v)).then_some((v, v))
            }
            [] => self.macros.integer(n).map(|v| (v, v)),
            _ => None,
        }
    }

    /// `for (T n = A; n < B; n++)` (or `<=`, `++n`, `n += c` with `c > 0`): `n` over `[A, B)`.
    fn counter(&self, f: Node, n: &str, depth: u32) -> Option<Span> {
        let k = self.k;
        let init = f.child_by_field_name("initializer")?.child_by_field_name("declarator")?;
        let start = self.span(init.child_by_field_name("value")?, depth + 1)?;
        let mut cond = f.child_by_field_name("condition")?;
        if cond.kind() == "condition_clause" {
            cond = cond.named_child(0)?;
        }
        let (l, op, r) = binary(k, cond)?;
        if compact(k.text, l) != n {
            return None;
        }
        let bound = self.span(r, depth + 1)?;
        let last = match op {
            "<" => bound.1 - 1,
            "<=" => bound.1,
            _ => return None,
        };
        let update = strip_parens(f.child_by_field_name("update")?);
        let steps_up = match update.kind() {
            "update_expression" => k.text_of(update).contains("++"),
            "assignment_expression" => {
                k.text_of(update.child_by_field_name("operator")?) == "+="
                    && self.span(update.child_by_field_name("right")?, depth + 1).is_some_and(|s| s.0 > 0)
            }
            _ => false,
        };
        let body = f.child_by_field_name("body")?;
        (steps_up && !written(k, body, n) && last >= start.0).then_some((start.0, last))
    }

    fn span(&self, n: Node, depth: u32) -> Option<Span> {
        if depth > 24 {
            return None;
        }
        let k = self.k;
        let n = strip_parens(n);
        let text = k.text_of(n);
        match n.kind() {
            "number_literal" => text.trim_end_matches(['u', 'U', 'l', 'L']).parse::<i64>().ok().map(|v| (v, v)),
            "identifier" => self.name(text, depth + 1),
            "unary_expression" => {
                let a = self.span(n.child_by_field_name("argument")?, depth + 1)?;
                match k.text_of(n.child_by_field_name("operator")?) {
                    "-" => Some((-a.1, -a.0)),
                    "+" => Some(a),
                    _ => None,
                }
            }
            "cast_expression" => {
                let ty = compact(k.text, n.child_by_field_name("type")?);
                ["int", "long", "long long", "unsigned", "size_t"]
                    .contains(&ty.as_str())
                    .then(|| self.span(n.child_by_field_name("value")?, depth + 1))
                    .flatten()
            }
            "call_expression" => {
                let f = k.text_of(n.child_by_field_name("function")?);
                let args = n.child_by_field_name("arguments")?;
                let [a, b] = args.named_children(&mut args.walk()).collect::<Vec<_>>()[..] else { return None };
                let (a, b) = (self.span(a, depth + 1)?, self.span(b, depth + 1)?);
                match f {
                    "max" => Some((a.0.max(b.0), a.1.max(b.1))),
                    "min" => Some((a.0.min(b.0), a.1.min(b.1))),
                    _ => None,
                }
            }
            "binary_expression" => {
                let op = k.text_of(n.child_by_field_name("operator")?);
                let a = self.span(n.child_by_field_name("left")?, depth + 1)?;
                let b = self.span(n.child_by_field_name("right")?, depth + 1)?;
                let corners = |f: fn(i64, i64) -> Option<i64>| -> Option<Span> {
                    let c = [f(a.0, b.0)?, f(a.0, b.1)?, f(a.1, b.0)?, f(a.1, b.1)?];
                    Some((*c.iter().min()?, *c.iter().max()?))
                };
                match op {
                    "+" => Some((a.0.checked_add(b.0)?, a.1.checked_add(b.1)?)),
                    "-" => Some((a.0.checked_sub(b.1)?, a.1.checked_sub(b.0)?)),
                    "*" => corners(i64::checked_mul),
                    // Truncating division is monotone in each operand while the divisor keeps its sign.
                    "/" if b.0 > 0 || b.1 < 0 => corners(i64::checked_div),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// Whether `name` is assigned under `n` other than by a `for` loop's own update.
fn written_outside_update(k: &Kernel, n: Node, name: &str) -> bool {
    descendants(n).into_iter().any(|d| {
        let target = match d.kind() {
            "assignment_expression" => d.child_by_field_name("left"),
            "update_expression" => d.child_by_field_name("argument"),
            _ => None,
        };
        let in_update = d.parent().is_some_and(|p| {
            p.kind() == "for_statement" && p.child_by_field_name("update").is_some_and(|u| u.id() == d.id())
        });
        !in_update && target.is_some_and(|t| compact(k.text, strip_parens(t)) == name)
    })
}

/// The window's halo: how far any read reaches from its unit's row and column (at the stride),
/// where every launch of the spec makes it constant (`radius = (kernel_size - 1) / 2`, a loop over
/// `taps` from `oy * step - pad`). `None` where some read's reach is not known or is past 32.
fn halo(k: &Kernel, win: &Window, launches: &[kernelpro_spec::LaunchSpec]) -> Option<u32> {
    let mut fixed = vec![(win.row.1.clone(), (AT, AT)), (win.col.1.clone(), (AT, AT))];
    for n in [&win.h, &win.w, &win.image.0, &win.image.1] {
        fixed.push((n.clone(), (FAR, FAR)));
    }
    let ext = Extent::new(k, &win.body, fixed, launches);
    let mut reach = 0i64;
    for (row, cols) in &win.taps {
        let r = ext.span(*row, 0)?;
        let c = cols.iter().try_fold((0i64, 0i64), |acc, t| ext.span(*t, 0).map(|s| (acc.0 + s.0, acc.1 + s.1)))?;
        let (r0, c0) = (AT * win.strides.0 as i64, AT * win.strides.1 as i64);
        reach = reach.max(r0 - r.0).max(r.1 - r0).max(c0 - c.0).max(c.1 - c0);
    }
    u32::try_from(reach).ok().filter(|h| *h <= 32)
}

/// A window sum the separable form computes: the unit's loop nest `for (..) for (..) acc += x[..];`.
struct Separable<'t> {
    nest: Node<'t>,
    acc: String,
}

/// The single statement of a block of one (or the statement itself).
fn only<'t>(n: Node<'t>) -> Option<Node<'t>> {
    if n.kind() != "compound_statement" {
        return Some(n);
    }
    match statements(n)[..] {
        [one] => Some(one),
        _ => None,
    }
}

/// Whether the window is a plain sum of unit weights over exactly the image's part of a
/// `(2R+1) x (2R+1)` square around the unit (`R` the halo), so that it is the sum of the square over
/// a tile that is zero outside the image: a loop nest whose innermost statement is `acc += x[..]`
/// (under a test that the tap is inside the image, if any), each axis's coordinate a loop counter
/// clamped to the image (`max(0, u - R)` to `min(u + R + 1, H)`) or the unit plus an offset counter
/// over `-R..=R` whose taps outside the image the test skips, both counters stepping by one.
/// The sum's order changes, from `KS^2` terms one after another to `KS` row sums of `KS` terms each:
/// both orders are within `(KS^2 - 1) u Σ|x|` of the exact sum (`u` the unit roundoff, 2^-24 for
/// float), so for `KS <= 15` they differ by under `2 * 224 * 6e-8 Σ|x|`, about `2.7e-5 Σ|x|`: within
/// the rtol of 1e-4 for non-negative inputs, and `Σ|x|` of a mixed-sign window is bounded by `KS^2`
/// times its largest tap, which the spec's atol covers at the sizes the corpus reads (the GPU run
/// checks it against the original).
fn separable<'t>(k: &Kernel, win: &Window<'t>, halo: Option<u32>) -> Result<Separable<'t>, NotApplicable> {
    let r = i64::from(halo.ok_or_else(|| no("the window's reach is not constant over the spec's launches"))?);
    if win.strides != (1, 1) {
        return Err(no("a strided window (a pooling window) sums no shared rows"));
    }
    if win.reads.len() != 1 {
        return Err(no("the window reads its input more than once a tap"));
    }
    let read = win.reads[0].0.clone();
    let nest = *win
        .body
        .iter()
        .find(|st| st.start_byte() <= read.start && read.end <= st.end_byte())
        .filter(|st| st.kind() == "for_statement")
        .ok_or_else(|| no("the window's read is not in a loop nest of the unit's own"))?;
    let inner = nest
        .child_by_field_name("body")
        .and_then(only)
        .filter(|n| n.kind() == "for_statement")
        .ok_or_else(|| no("the window is not two nested loops"))?;
    let sts = match inner.child_by_field_name("body") {
        Some(b) if b.kind() == "compound_statement" => statements(b),
        Some(b) => vec![b],
        None => vec![],
    };
    let Some((last, decls)) = sts.split_last() else { return Err(no("the window's inner loop is empty")) };
    if decls.iter().any(|d| d.kind() != "declaration") {
        return Err(no("the window's inner loop does more than accumulate"));
    }
    let (test, add) = match last.kind() {
        "if_statement" if last.child_by_field_name("alternative").is_none() => (
            last.child_by_field_name("condition").and_then(|c| c.named_child(0)),
            last.child_by_field_name("consequence").and_then(only),
        ),
        _ => (None, Some(*last)),
    };
    let sum_of = |n: Node| -> Option<String> {
        let e = strip_parens(n.named_child(0)?);
        let plain = n.kind() == "expression_statement"
            && e.kind() == "assignment_expression"
            && k.text_of(e.child_by_field_name("operator")?) == "+="
            && strip_parens(e.child_by_field_name("right")?).byte_range() == read;
        let acc = e.child_by_field_name("left").filter(|l| l.kind() == "identifier")?;
        plain.then(|| k.text_of(acc).to_string())
    };
    let acc = add.and_then(sum_of).ok_or_else(|| no("the window is not a plain sum `acc += x[..]` (unit weights)"))?;
    let declared = win.body.iter().flat_map(|st| descendants(*st)).find(|d| {
        d.kind() == "declaration"
            && d.child_by_field_name("declarator")
                .and_then(|i| i.child_by_field_name("declarator"))
                .is_some_and(|n| k.text_of(n) == acc)
    });
    if declared.and_then(|d| d.child_by_field_name("type")).is_none_or(|t| k.text_of(t) != win.ty) {
        return Err(no(format!("the window's sum `{acc}` is not declared a `{}` like its input", win.ty)));
    }
    let launches = k.all_launches().unwrap_or_default();
    let fixed = vec![(win.row.1.clone(), (AT, AT)), (win.col.1.clone(), (AT, AT))];
    let ext = Extent::new(k, &win.body, fixed, &launches);
    let point = |n: Node, v: i64| ext.span(n, 0) == Some((v, v));
    let steps_by_one = |f: Node| {
        f.child_by_field_name("update").is_some_and(|u| u.kind() == "update_expression" && k.text_of(u).contains("++"))
    };
    let counter_of = |name: &str| {
        [nest, inner].into_iter().find(|f| {
            f.child_by_field_name("initializer")
                .and_then(|i| i.child_by_field_name("declarator"))
                .and_then(|i| i.child_by_field_name("declarator"))
                .is_some_and(|n| k.text_of(n) == name)
        })
    };
    let args = |n: Node<'t>, f: &str| -> Option<(Node<'t>, Node<'t>)> {
        let n = strip_parens(n);
        (n.kind() == "call_expression" && n.child_by_field_name("function").is_some_and(|g| k.text_of(g) == f))
            .then(|| n.child_by_field_name("arguments"))
            .flatten()
            .and_then(|a| match a.named_children(&mut a.walk()).collect::<Vec<_>>()[..] {
                [x, y] => Some((x, y)),
                _ => None,
            })
    };
    // Per axis: (its coordinate, whether its out-of-image taps must be skipped by the test).
    let (row, cols) = &win.taps[0];
    let [col] = cols[..] else { return Err(no("the window's column is not one coordinate")) };
    let mut loops = Vec::new();
    let mut coords = Vec::new();
    for (coord, unit, size) in [(*row, &win.row.1, &win.image.0), (col, &win.col.1, &win.image.1)] {
        let name = k.text_of(strip_parens(coord)).to_string();
        let unit_at = |n: Node, off: i64| point(n, AT + off) && k.text_of(n).contains(unit.as_str());
        // Clamped: `for (j = max(0, u - R); j < min(u + R + 1, H); ++j)`.
        let clamped = counter_of(&name).filter(|f| {
            let init = f
                .child_by_field_name("initializer")
                .and_then(|i| i.child_by_field_name("declarator"))
                .and_then(|d| d.child_by_field_name("value"));
            let lo = init
                .and_then(|v| args(v, "max"))
                .is_some_and(|(a, b)| point(a, 0) && unit_at(b, -r) || point(b, 0) && unit_at(a, -r));
            let cond = f
                .child_by_field_name("condition")
                .and_then(|c| if c.kind() == "condition_clause" { c.named_child(0) } else { Some(c) });
            let hi = cond.and_then(|c| binary(k, c)).is_some_and(|(l, op, b)| {
                op == "<"
                    && compact(k.text, l) == name
                    && args(b, "min").is_some_and(|(a, b)| {
                        compact(k.text, b) == *size && unit_at(a, r + 1)
                            || compact(k.text, a) == *size && unit_at(b, r + 1)
                    })
            });
            lo && hi && steps_by_one(*f)
        });
        if let Some(f) = clamped {
            loops.push(f.id());
            coords.push((name, false));
            continue;
        }
        // Offset: `int rr = u + d;` in the inner loop with `d` over `-R..=R`, its taps outside skipped.
        let offset = decls.iter().find_map(|d| {
            let i = d.child_by_field_name("declarator").filter(|i| i.kind() == "init_declarator")?;
            (i.child_by_field_name("declarator").map(|n| k.text_of(n)) == Some(name.as_str())).then_some(())?;
            let (a, op, b) = binary(k, i.child_by_field_name("value")?)?;
            let d = match (compact(k.text, a) == *unit, compact(k.text, b) == *unit) {
                (true, false) => compact(k.text, b),
                (false, true) => compact(k.text, a),
                _ => return None,
            };
            let f = counter_of(&d).filter(|f| steps_by_one(*f))?;
            (op == "+" && ext.name(&d, 0) == Some((-r, r))).then_some(f)
        });
        match offset {
            Some(f) => {
                loops.push(f.id());
                coords.push((name, true));
            }
            None => {
                return Err(no(format!(
                    "the window's `{name}` does not run over the image's part of `{unit} - {r} ..= {unit} + {r}` one by one"
                )));
            }
        }
    }
    if loops[0] == loops[1] {
        return Err(no("one loop moves both of the window's coordinates"));
    }
    // The test, if any, is exactly that the tap is inside the image.
    let sizes = [&win.image.0, &win.image.1];
    let names: Vec<&str> = coords.iter().map(|c| c.0.as_str()).collect();
    let inside = test.is_some_and(|t| {
        let mut atoms = Vec::new();
        chain(k, t, "&&", &mut atoms);
        let mut seen = Vec::new();
        for a in atoms {
            if let Some((v, b)) = bound_of(k, a, &names, false)
                .filter(|(v, b)| names.iter().position(|n| n == v).is_some_and(|i| b == sizes[i]))
            {
                seen.push((v, "hi", b));
            } else if let Some((v, b)) = bound_of(k, a, &names, true).filter(|(_, b)| b == "0") {
                seen.push((v, "lo", b));
            } else {
                return false;
            }
        }
        seen.sort();
        seen.dedup();
        seen.len() == 4
    });
    if test.is_some() && !inside {
        return Err(no("the window's taps are tested other than for being inside the image"));
    }
    if coords.iter().any(|c| c.1) && !inside {
        return Err(no("the window reads taps outside the image"));
    }
    Ok(Separable { nest, acc })
}

/// One candidate: (output tile rows, columns), the halo, and the launch's new block `(x, y)` with the
/// grid of one block per tile, or `None` under the user's launch.
type Shape = ((u32, u32), u32, Option<(u32, u32)>);

/// The tiles: the launch's own block first (an output per thread, every block busy under the user's
/// grid), then launch variants of one block per tile: the block with two rows of outputs a thread, and
/// a 32x8 block with two and four. A 1D block (no tile) keeps the square tiles under its launch.
fn shapes(block: [u32; 3], halo: Option<u32>) -> Vec<Shape> {
    let halos: Vec<u32> = halo.map(|h| vec![h]).unwrap_or_else(|| HALOS.to_vec());
    let (bx, by) = (block[0], block[1]);
    if bx < 8 || by < 2 || bx * by < 64 {
        let guessed = SHAPES.iter().map(|&(t, h)| ((t, t), h, None));
        return match halo {
            Some(h) => [(32, h), (16, h)].into_iter().map(|(t, h)| ((t, t), h, None)).collect(),
            None => guessed.collect(),
        };
    }
    let mut out: Vec<Shape> = halos.iter().map(|&h| ((by, bx), h, None)).collect();
    let (vx, vy) = VARIANT_BLOCK;
    for (tile, b) in [((2 * by, bx), (bx, by)), ((2 * vy, vx), VARIANT_BLOCK), ((4 * vy, vx), VARIANT_BLOCK)] {
        if !out.iter().any(|s| s.0 == tile) {
            out.push((tile, halos[0], Some(b)));
        }
    }
    out
}

/// The spec's name for a scalar parameter: its binding (`width = WW`), bracketed unless a name or a literal.
fn spec_name(k: &Kernel, param: &str) -> Option<String> {
    let rhs = k.spec_lines().iter().find_map(|l| {
        l.text.split_once('=').filter(|(lhs, _)| lhs.trim() == param).map(|(_, rhs)| rhs.trim().to_string())
    })?;
    Some(if rhs.chars().all(|c| c.is_alphanumeric() || c == '_') { rhs } else { format!("({rhs})") })
}

/// The rewrite's spec under a block `(x, y)` of one block per `(rows, columns)` tile: the grid's x and
/// y in the spec's names of the units' width and height, its z (the images) as written.
fn relaunched(
    k: &Kernel,
    win: &Window,
    source: &str,
    (th, tw): (u32, u32),
    (bx, by): (u32, u32),
) -> Option<(String, String)> {
    let lines = k.spec_lines();
    let grid = lines.iter().find(|l| kernelpro_spec::launch_part(&l.text) == Some("grid"))?;
    let block = lines.iter().find(|l| kernelpro_spec::launch_part(&l.text) == Some("block"))?;
    let parts = |line: &kernelpro_spec::SpecLine| -> Vec<String> {
        let rest = line.text.split_once('=').map(|(_, r)| r.trim()).unwrap_or_default();
        match rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
            Some(inner) => {
                kernelpro_spec::split_top_level(inner).into_iter().map(|(_, p)| p.trim().to_string()).collect()
            }
            None => vec![rest.to_string()],
        }
    };
    let (w, h) = (spec_name(k, &win.w)?, spec_name(k, &win.h)?);
    let mut g = vec![format!("ceil_div({w}, {tw})"), format!("ceil_div({h}, {th})")];
    g.extend(parts(grid).into_iter().skip(2));
    let mut b = vec![bx.to_string(), by.to_string()];
    b.extend(parts(block).into_iter().skip(2));
    let (g, b) = (format!("({})", g.join(", ")), format!("({})", b.join(", ")));
    let (g_at, b_at) = (k.spec_offset(grid), k.spec_offset(block));
    // Spec lines sit above the kernel's body, so their offsets hold in the rewritten text.
    let edits = [
        (g_at..g_at + grid.text.len(), format!("grid = {g}")),
        (b_at..b_at + block.text.len(), format!("block = {b}")),
    ];
    let text = crate::syntax::edited(source, edits);
    let why = super::launch::launch_limits(&text, &k.func.name, None);
    if let Err(why) = why {
        tracing::debug!(kernel = %k.func.name, %why, "WindowTile launch variant dropped");
        return None;
    }
    Some((text, format!("; launch block = {b}, grid = {g}")))
}

fn attempt(k: &Kernel) -> Result<Vec<Rewrite>, NotApplicable> {
    let win = recognise(k)?;
    fits(k, &win)?;
    let launches = k.all_launches().ok_or_else(|| no("no launch spec gives the image sizes"))?;
    let block = launches.first().map(|l| l.block).ok_or_else(|| no("no launch spec gives the image sizes"))?;
    let halo = halo(k, &win, &launches);
    let sep = separable(k, &win, halo);
    if let Err(why) = &sep {
        tracing::debug!(kernel = %k.func.name, why = %why.reason, "WindowTile: no separable form");
    }
    let mut out: Vec<Rewrite> = Vec::new();
    let bytes = kernelpro_source::kernel_model::ElemType::new(&win.ty).bytes.unwrap_or(16);
    for ((th, tw), h, relaunch) in shapes(block, halo) {
        for sep in [None, sep.as_ref().ok()] {
            let Some(c) = candidate(k, &win, (th, tw), h, relaunch, sep, bytes) else { continue };
            if !out.iter().any(|r| r.source == c.source) {
                out.push(c);
            }
        }
    }
    if out.is_empty() {
        return Err(no("no tile of the window's inputs fits a block's static shared memory"));
    }
    Ok(out)
}

/// Why a window has no separable form (row sums, then column sums), `None` where it has one.
#[cfg(test)]
pub(super) fn why_not_separable(text: &str, kernel: &str) -> Option<String> {
    let canonical = kernelpro_source::canonical::kernel(text, kernel);
    let text = canonical.as_deref().unwrap_or(text);
    let k = crate::kernel::Kernel::find(text, kernel)?;
    let win = recognise(&k).ok()?;
    let launches = k.all_launches()?;
    separable(&k, &win, halo(&k, &win, &launches)).err().map(|e| e.reason)
}

/// One candidate: a `(rows, columns)` tile with a halo, under the user's launch or a block per tile.
fn candidate(
    k: &Kernel,
    win: &Window,
    (th, tw): (u32, u32),
    h: u32,
    relaunch: Option<(u32, u32)>,
    sep: Option<&Separable>,
    bytes: u32,
) -> Option<Rewrite> {
    // Only tiles within a block's static shared memory (a wide stride or element may not fit).
    let (sr, sc) = win.strides;
    let side_r = (th - 1) * sr + 1 + 2 * h;
    let rows = if sep.is_some() { side_r * (tw + 1) } else { 0 };
    if (side_r * ((tw - 1) * sc + 2 + 2 * h) + rows) * bytes > STATIC_SHARED {
        return None;
    }
    let text = generate(k, win, (th, tw), h, sep)?;
    let mut source = k.with_body(&text);
    let mut launch = String::new();
    if let Some(b) = relaunch {
        (source, launch) = relaunched(k, win, &source, (th, tw), b)?;
    }
    let batch = win.batch.as_ref().map(|((_, z), _)| format!(" of each image {z}")).unwrap_or_default();
    let halo_of = if sep.is_some() || win_halo_known(k, win) { "the window's" } else { "a guessed" };
    let threads = relaunch.map(|(x, y)| x * y);
    let block = k.launch().map(|l| l.block).unwrap_or([1, 1, 1]);
    let per_thread = match (th * tw).div_ceil(threads.unwrap_or(block[0] * block[1]).max(1)) {
        _ if block[0] < 8 || block[1] < 2 => "several outputs per thread".to_string(),
        1 => "an output per thread".to_string(),
        n => format!("{n} outputs per thread"),
    };
    let separable = if sep.is_some() { ", separable (row sums, then column sums)" } else { "" };
    let note = format!(
        "2D window over ({}, {}){batch} reading {} through {th}x{tw} shared output tiles with {halo_of} halo of {h}, {per_thread}{separable}{launch}",
        win.row.1, win.col.1, win.x
    );
    Some(Rewrite { source, note })
}

/// Whether every spec launch makes the window's reach constant.
fn win_halo_known(k: &Kernel, win: &Window) -> bool {
    k.all_launches().is_some_and(|l| halo(k, win, &l).is_some())
}

impl Recipe for WindowTile {
    fn name(&self) -> &'static str {
        "WindowTile"
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
        let canonical = kernelpro_source::canonical::kernel(text, kernel);
        let text = canonical.as_deref().unwrap_or(text);
        crate::kernel::Kernel::find(text, kernel).map(|k| attempt(&k).unwrap_or_default()).unwrap_or_default()
    }
    fn not_applicable(&self, text: &str, kernel: &str) -> NotApplicable {
        let canonical = kernelpro_source::canonical::kernel(text, kernel);
        let text = canonical.as_deref().unwrap_or(text);
        match crate::kernel::Kernel::find(text, kernel).map(|k| attempt(&k)) {
            Some(Err(e)) => e,
            Some(Ok(_)) => no("it applies"),
            None => no("the kernel has no body"),
        }
    }
}
