//! The kernel's work units, recognised from what each thread touches rather
//! than from one spelling: the global thread indices it declares (1D or 2D,
//! any axis, any integer type, casts and operand order free), the bounds its
//! guard puts on them (`if (i >= n) return;`, `if (r < R && c < C) { ... }`),
//! and the per-unit statements left once those are taken away. Every
//! structural rewrite (`recipes`) starts from this: it re-binds the user's
//! index names from a grid-stride unit counter, so the rewritten kernel is
//! correct under any launch.

use super::Kernel;
use crate::kernel_model::{AccessKind, Atom, Dep, Dim, KernelModel, Poly, Space};
use crate::syntax::{compact, descendants, single_statement, statements};
use tree_sitter::Node;

/// Built-ins that tie a statement to the original thread mapping; a unit body naming one cannot be re-mapped.
pub const THREAD_BOUND: &[&str] = &[
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "__syncthreads",
    "__syncwarp",
    "__shfl",
    "__shared__",
    "warpSize",
    "cooperative_groups",
    "__ballot",
    "__activemask",
];

/// Cast spellings stripped before an index value is compared (after whitespace removal).
const CASTS: &[&str] = &[
    "(int)",
    "(unsigned)",
    "(unsignedint)",
    "(long)",
    "(longlong)",
    "(unsignedlong)",
    "(unsignedlonglong)",
    "(size_t)",
    "(int64_t)",
    "(uint64_t)",
    "(int32_t)",
    "(uint32_t)",
    "(ptrdiff_t)",
    "(longint)",
];

/// One global thread index of the kernel (`T NAME = blockIdx.A * blockDim.A + threadIdx.A`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexVar {
    pub name: String,
    pub ty: String,
    pub axis: char,
    /// The exclusive bound the guard puts on it, as kernel-side text.
    pub bound: String,
}

/// A statement of the per-unit body: a node of the kernel, or generated text.
#[derive(Debug, Clone, Copy)]
pub enum Piece<'t> {
    Node(Node<'t>),
    /// A guard atom the original returned on (`!(cond)` of a wrapping guard): the unit is skipped.
    Skip(Node<'t>, bool),
    /// A declaration the model sees as the global `x` index plus a block-uniform offset
    /// (`int i = blockIdx.y * H + blockIdx.x * blockDim.x + threadIdx.x;`): re-declared from the unit's `kp_gx`.
    Derived(Node<'t>),
}

/// A kernel written as one thread per work unit.
pub struct Units<'t> {
    /// Slowest-varying first; the `x` index is last, so neighbouring units are neighbouring `x` indices as before.
    pub indices: Vec<IndexVar>,
    pub body: Vec<Piece<'t>>,
    /// Declarations before the indices that are the same for every thread (`int N = B * T;`): emitted once, before the unit loop.
    pub head: Vec<Node<'t>>,
    /// Indices that are a block index alone (`int b = blockIdx.y;`): (name, type, axis). They keep the
    /// launch's own `y`/`z` extent, so the unit loop strides over the `x` blocks only.
    pub fixed: Vec<(String, String, char)>,
    /// Kernel parameters the unit body assigns (`input += row * N;`): each unit of the original
    /// started from the launch's value, so a loop over units restores it at every unit.
    pub restored: Vec<String>,
}

impl<'t> Units<'t> {
    /// The body's plain statements (not its skip atoms or derived declarations).
    pub fn nodes(&self) -> Vec<Node<'t>> {
        self.body.iter().filter_map(|p| if let Piece::Node(n) = p { Some(*n) } else { None }).collect()
    }

    /// The body's statements where it is plain statements only.
    pub fn only_nodes(&self) -> Option<Vec<Node<'t>>> {
        self.body.iter().map(|p| if let Piece::Node(n) = p { Some(*n) } else { None }).collect()
    }

    pub fn names(&self) -> Vec<&str> {
        self.indices.iter().map(|i| i.name.as_str()).collect()
    }

    /// Whether the fixed indices are all on `z`, so the units walk the `x` and `y` blocks (a batch on `z`).
    pub fn walks_y(&self) -> bool {
        !self.fixed.is_empty() && self.fixed.iter().all(|f| f.2 == 'z')
    }
}

/// The compact text with casts and parentheses removed.
pub(super) fn bare(text: &str) -> String {
    let mut s = text.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    for cast in CASTS {
        s = s.replace(cast, "");
    }
    while let Some(start) = s.find("static_cast<") {
        let Some(end) = s[start..].find('>') else {
            break;
        };
        s.replace_range(start..start + end + 1, "");
    }
    s.replace(['(', ')'], "")
}

/// The axis of `blockIdx.A * blockDim.A + threadIdx.A` in any order, with casts.
pub fn global_index_axis(value: &str) -> Option<char> {
    let s = bare(value);
    let terms: Vec<&str> = s.split('+').collect();
    let [a, b] = terms[..] else { return None };
    for axis in ['x', 'y', 'z'] {
        let t = format!("threadIdx.{axis}");
        let products = [format!("blockIdx.{axis}*blockDim.{axis}"), format!("blockDim.{axis}*blockIdx.{axis}")];
        if (a == t && products.contains(&b.to_string())) || (b == t && products.contains(&a.to_string())) {
            return Some(axis);
        }
    }
    None
}

/// The index declarations of a `declaration` statement: all its declarators, or `None` when any is not one.
pub(super) fn index_decls(k: &Kernel, st: Node) -> Option<Vec<(String, String, char)>> {
    if st.kind() != "declaration" {
        return None;
    }
    let ty = k.text_of(st.child_by_field_name("type")?).to_string();
    let mut cursor = st.walk();
    let decls: Vec<Node> = st.children_by_field_name("declarator", &mut cursor).collect();
    let mut out = Vec::new();
    for d in decls {
        let name = d
            .child_by_field_name("declarator")
            .filter(|n| d.kind() == "init_declarator" && n.kind() == "identifier")?;
        let value = k.text_of(d.child_by_field_name("value")?);
        // A block index alone is a fixed index, marked by an upper-case axis.
        let axis = global_index_axis(value).or_else(|| {
            ['x', 'y', 'z'].into_iter().find(|a| bare(value) == format!("blockIdx.{a}")).map(|a| a.to_ascii_uppercase())
        })?;
        out.push((k.text_of(name).to_string(), ty.clone(), axis));
    }
    (!out.is_empty()).then_some(out)
}

/// `T r = <an expression of blockIdx and threadIdx>;` (both named, nothing loaded or called): an index
/// mapped by hand (`blockIdx.x * TILE + threadIdx.x / TILE`); the declared names.
fn mixed_index_decl(k: &Kernel, st: Node) -> Option<Vec<(String, String)>> {
    if st.kind() != "declaration" || k.text_of(st).contains("__shared__") {
        return None;
    }
    let ty = k.text_of(st.child_by_field_name("type")?).to_string();
    let mut cursor = st.walk();
    let mut out = Vec::new();
    for d in st.children_by_field_name("declarator", &mut cursor) {
        let name = d
            .child_by_field_name("declarator")
            .filter(|n| d.kind() == "init_declarator" && n.kind() == "identifier")?;
        let value = d.child_by_field_name("value")?;
        let text = k.text_of(value);
        let pure = descendants(value).iter().all(|n| {
            !matches!(
                n.kind(),
                "subscript_expression" | "call_expression" | "pointer_expression" | "assignment_expression"
            )
        });
        if !(text.contains("blockIdx") && text.contains("threadIdx") && pure) || text.contains("gridDim") {
            return None;
        }
        out.push((k.text_of(name).to_string(), ty.clone()));
    }
    (!out.is_empty()).then_some(out)
}

/// The name of the synthetic unit index that stands for `blockIdx.x * blockDim.x + threadIdx.x` where
/// the kernel only uses that sum inside larger expressions.
pub const GLOBAL_X: &str = "kp_gx";

/// `blockIdx.x * blockDim.x + threadIdx.x` as the model writes it.
fn global_x() -> Poly {
    Poly::atom(Atom::Tid(Dim::X)).add(&Poly::atom(Atom::Bid(Dim::X)).mul(&Poly::atom(Atom::Bdim(Dim::X))))
}

/// How the model sees a declaration that is not an index by its spelling.
enum ModelIndex {
    /// The global thread index of 1D blocks on a 2D/3D grid, flattened
    /// (`long b = blockIdx.y * gridDim.x + blockIdx.x; long i = b * blockDim.x + threadIdx.x;`): (name, type).
    Flat(String, String),
    /// The global `x` index plus a block-uniform offset: see [`Piece::Derived`].
    Derived,
}

fn model_index(k: &Kernel, st: Node, model: &KernelModel) -> Option<ModelIndex> {
    if st.kind() != "declaration" {
        return None;
    }
    let d = st.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let name = k.text_of(d.child_by_field_name("declarator").filter(|n| n.kind() == "identifier")?);
    let (_, poly) = model.thread_values.iter().find(|(n, _)| n == name)?;
    let rest = poly.sub(&global_x());
    let flat = {
        let (bx, gx) = (Poly::atom(Atom::Bdim(Dim::X)), Poly::atom(Atom::Gdim(Dim::X)));
        let y = Poly::atom(Atom::Bid(Dim::Y)).mul(&bx).mul(&gx);
        let z = Poly::atom(Atom::Bid(Dim::Z)).mul(&bx).mul(&gx).mul(&Poly::atom(Atom::Gdim(Dim::Y)));
        rest == y || rest == y.add(&z)
    };
    // Without threadIdx.y/z in the value, a 2D block would run each index several times.
    let one_d = k.launches().is_some_and(|ls| ls.iter().all(|l| l.block[1] == 1 && l.block[2] == 1));
    // `gid = blockIdx.x * blockDim.x + tid` through a `tid = threadIdx.x` helper is the global index itself.
    if (flat || rest.is_zero()) && one_d {
        return Some(ModelIndex::Flat(name.to_string(), k.text_of(st.child_by_field_name("type")?).to_string()));
    }
    let offset_ok = !rest.is_zero()
        && rest.dep() == Dep::Uniform
        && !rest.data_dependent()
        && rest.atoms().all(|a| {
            !matches!(a, Atom::Bid(Dim::X) | Atom::Gdim(Dim::X) | Atom::Loop(_) | Atom::Opaque { data: true, .. })
        });
    (offset_ok && derived_decl(k, st).is_some()).then_some(ModelIndex::Derived)
}

/// The derived declaration re-written from [`GLOBAL_X`]: the value's `+` terms
/// `blockIdx.x * blockDim.x` and `threadIdx.x` become `kp_gx`, block indices
/// of `y`/`z` the fixed `kp_by`/`kp_bz`; `None` when the value is not such a sum.
pub fn derived_decl(k: &Kernel, st: Node) -> Option<String> {
    let d = st.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let value = d.child_by_field_name("value")?;
    let terms = atoms(k, value, "+");
    let tid = terms.iter().position(|t| bare(k.text_of(*t)) == "threadIdx.x")?;
    let block = terms
        .iter()
        .position(|t| ["blockIdx.x*blockDim.x", "blockDim.x*blockIdx.x"].contains(&bare(k.text_of(*t)).as_str()))?;
    let mut rest = Vec::new();
    for (i, t) in terms.iter().enumerate() {
        if i == tid || i == block {
            continue;
        }
        let text = k.text_of(*t);
        if ["threadIdx", "blockDim", "gridDim", "blockIdx.x", "__"].iter().any(|b| text.contains(b)) {
            return None;
        }
        let text = text.replace("blockIdx.y", "kp_by").replace("blockIdx.z", "kp_bz");
        rest.push(if text.chars().all(|c| c.is_alphanumeric() || c == '_') { text } else { format!("({text})") });
    }
    rest.push(GLOBAL_X.to_string());
    Some(edited(k, st, &[(value.byte_range(), rest.join(" + "))]))
}

/// `T b = <block-uniform value>;` naming block or grid built-ins (`blockIdx.y * gridDim.x + blockIdx.x`):
/// a helper of an index declaration the model recognises.
fn block_helper(k: &Kernel, st: Node) -> bool {
    st.kind() == "declaration"
        && !k.text_of(st).contains("threadIdx")
        && !k.text_of(st).contains("__shared__")
        && descendants(st)
            .into_iter()
            .all(|n| !matches!(n.kind(), "subscript_expression" | "call_expression" | "pointer_expression"))
        && descendants(st).into_iter().any(|n| n.kind() == "init_declarator")
}

/// `T w = <gridDim and constants>;`: a size the launch gives, the same in every thread of it.
fn launch_extent(k: &Kernel, st: Node) -> bool {
    let Some(v) = st
        .child_by_field_name("declarator")
        .filter(|d| st.kind() == "declaration" && d.kind() == "init_declarator")
        .and_then(|d| d.child_by_field_name("value"))
    else {
        return false;
    };
    let names: Vec<&str> = descendants(v)
        .into_iter()
        .filter(|n| n.kind() == "identifier")
        .map(|n| k.text_of(n))
        .filter(|n| THREAD_BOUND.iter().any(|b| n.starts_with(b)))
        .collect();
    names.contains(&"gridDim")
        && names.iter().all(|n| *n == "gridDim")
        && descendants(v)
            .into_iter()
            .all(|n| !matches!(n.kind(), "subscript_expression" | "call_expression" | "assignment_expression"))
}

/// `T tid = threadIdx.x;`: a name for the thread's lane in a 1D block, used by the index declaration after it.
fn thread_helper(k: &Kernel, st: Node) -> bool {
    let Some(d) =
        st.child_by_field_name("declarator").filter(|d| st.kind() == "declaration" && d.kind() == "init_declarator")
    else {
        return false;
    };
    d.child_by_field_name("value").is_some_and(|v| bare(k.text_of(v)) == "threadIdx.x")
        && st.named_children(&mut st.walk()).filter(|c| c.kind() == "init_declarator").count() == 1
}

/// Splits `a OP b OP c` (one operator, `||` or `&&`) into its atoms, through parentheses.
fn atoms<'t>(k: &Kernel, cond: Node<'t>, op: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![cond];
    while let Some(n) = stack.pop() {
        let n = strip_parens(n);
        let is_op =
            n.kind() == "binary_expression" && n.child_by_field_name("operator").is_some_and(|o| k.text_of(o) == op);
        if is_op {
            stack.extend([n.child_by_field_name("right"), n.child_by_field_name("left")].into_iter().flatten());
        } else {
            out.push(n);
        }
    }
    out
}

pub fn strip_parens(mut n: Node) -> Node {
    while n.kind() == "parenthesized_expression" && n.named_child_count() == 1 {
        n = n.named_child(0).expect("one child");
    }
    n
}

/// `X OUT B` (or `B IN X`) with X one of `names`: (X, B). `out` is the out-of-range operator (`>=`), `flipped` its mirror (`<=`).
fn bound_atom<'t>(k: &Kernel, atom: Node<'t>, names: &[&str], out: &str, flipped: &str) -> Option<(String, Node<'t>)> {
    if atom.kind() != "binary_expression" {
        return None;
    }
    let op = k.text_of(atom.child_by_field_name("operator")?);
    let (l, r) = (atom.child_by_field_name("left")?, atom.child_by_field_name("right")?);
    let (x, b) = if op == out {
        (l, r)
    } else if op == flipped {
        (r, l)
    } else {
        return None;
    };
    let x = if names.contains(&GLOBAL_X) && global_index_axis(k.text_of(x)) == Some('x') {
        GLOBAL_X.to_string()
    } else {
        bare(k.text_of(x))
    };
    names.contains(&x.as_str()).then_some((x, b))
}

/// The units with a fixed `y` index (`int oc = blockIdx.y;`, no guard on it) made a unit index
/// bounded by the integer parameter that every launch the search may pick gives the grid's `y`
/// extent (`co` for `grid = (…, CO, B)` with `co = CO`): a contraction can then tile across it.
/// `None` when there is no such index or no single such parameter.
pub fn promote_fixed_y<'t>(k: &Kernel, u: &Units<'t>) -> Option<Units<'t>> {
    let at = u.fixed.iter().position(|f| f.2 == 'y')?;
    let launches = k.launches()?;
    let params: Vec<&str> = k.func.params.iter().filter(|p| !p.pointer).map(|p| p.name.as_str()).collect();
    let matching: Vec<&str> = params
        .into_iter()
        .filter(|name| launches.iter().all(|l| l.ints.iter().any(|(n, v)| n == name && *v == i64::from(l.grid[1]))))
        .collect();
    let [bound] = matching[..] else { return None };
    let (name, ty, _) = u.fixed[at].clone();
    let mut fixed = u.fixed.clone();
    fixed.remove(at);
    let mut indices = vec![IndexVar { name, ty, axis: 'y', bound: bound.to_string() }];
    indices.extend(u.indices.iter().cloned());
    Some(Units { indices, body: u.body.clone(), head: u.head.clone(), fixed, restored: u.restored.clone() })
}

/// Whether `node` names a built-in of the original thread mapping.
pub fn thread_bound(k: &Kernel, node: Node) -> bool {
    descendants(node).into_iter().any(|n| {
        (n.kind() == "identifier"
            || n.kind() == "field_identifier"
            || n.kind() == "type_identifier"
            || n.kind() == "primitive_type"
            || n.kind().contains("specifier"))
            && THREAD_BOUND.iter().any(|b| k.text_of(n).starts_with(b))
    }) || k.text_of(node).contains("__shared__")
}

/// Identifiers assigned or incremented anywhere under `node` (a store into an element, `y[i] = v`,
/// assigns none; a parenthesised target, `(x) = v`, is its identifier's).
pub fn assigned_in<'t>(k: &Kernel<'t>, node: Node) -> Vec<&'t str> {
    descendants(node)
        .into_iter()
        .filter_map(|d| match d.kind() {
            "assignment_expression" => d.child_by_field_name("left"),
            "update_expression" => d.child_by_field_name("argument"),
            _ => None,
        })
        .map(strip_parens)
        .filter(|t| t.kind() == "identifier")
        .map(|t| k.text_of(t))
        .collect()
}

/// Identifiers named in `node` (not field names).
pub fn names_in<'t>(k: &Kernel<'t>, node: Node) -> Vec<&'t str> {
    descendants(node).into_iter().filter(|n| n.kind() == "identifier").map(|n| k.text_of(n)).collect()
}

/// The kernel's work units, or `None` when it is not one thread per unit with a bounding guard.
pub fn units<'t>(k: &'t Kernel) -> Option<Units<'t>> {
    let body = k.body();
    let mut sts = statements(body);
    let mut indices: Vec<(String, String, char)> = Vec::new();
    let mut head = Vec::new();
    let mut strides: Vec<String> = Vec::new();
    // Index declarations first; uniform declarations before them are the head, after them the unit's own.
    let mut pre: Vec<Piece> = Vec::new();
    let model = k.model();
    let mut helpers: Vec<String> = Vec::new();
    let mut derived = false;
    // Indices mapped by hand from block and thread (`row = blockIdx.x * TILE + threadIdx.x / TILE`).
    let mut mixed: Vec<(String, String)> = Vec::new();
    while let Some(first) = sts.first().copied() {
        if let Some(d) = index_decls(k, first) {
            indices.extend(d);
        } else if let Some(mi) = model.as_ref().and_then(|m| model_index(k, first, m)) {
            match mi {
                ModelIndex::Flat(name, ty) => indices.push((name, ty, 'x')),
                ModelIndex::Derived => {
                    pre.push(Piece::Derived(first));
                    derived = true;
                }
            }
        } else if indices.is_empty()
            && mixed.len() < 3
            && let Some(names) = mixed_index_decl(k, first)
        {
            mixed.extend(names);
        } else if first.kind() == "declaration" && !thread_bound(k, first) {
            // Uniform declarations (scalar parameters and earlier uniform names only) go before the unit loop.
            let head_names: Vec<String> = head.iter().flat_map(|h| declared_in(k, *h)).collect();
            let mut cursor = first.walk();
            let values: Vec<Node> = first
                .children_by_field_name("declarator", &mut cursor)
                .filter_map(|d| d.child_by_field_name("value"))
                .collect();
            let uniform = !values.is_empty()
                && values.iter().all(|v| {
                    descendants(*v).into_iter().all(|n| match n.kind() {
                        "identifier" => {
                            k.param(k.text_of(n)).is_some_and(|p| !p.pointer)
                                || head_names.iter().any(|h| h == k.text_of(n))
                        }
                        "subscript_expression"
                        | "call_expression"
                        | "assignment_expression"
                        | "update_expression"
                        | "pointer_expression" => false,
                        _ => true,
                    })
                });
            if indices.is_empty() && !derived || (uniform && pre.is_empty()) {
                head.push(first)
            } else {
                pre.push(Piece::Node(first))
            }
        } else if first.kind() == "declaration" && is_stride_decl(k, first) {
            strides.extend(declared_in(k, first));
        } else if indices.is_empty() && launch_extent(k, first) {
            // A size the launch gives (`int w = gridDim.x * 32;`) before the indices: the same in every
            // thread, kept before the unit loop (a rewrite that uses it keeps the launch: launch::sized_by_launch).
            head.push(first)
        } else if block_helper(k, first) || thread_helper(k, first) {
            helpers.extend(declared_in(k, first));
        } else {
            break;
        }
        sts.remove(0);
    }
    // A hand mapping stands alone: its indices are the guard's domain, each unit once (what the
    // original computes under its launch is for the search's check to confirm).
    if !mixed.is_empty() {
        if !indices.is_empty() || derived || mixed.len() > 3 {
            return None;
        }
        let axes = ['z', 'y', 'x'];
        let n = mixed.len();
        indices = mixed.iter().enumerate().map(|(i, (name, ty))| (name.clone(), ty.clone(), axes[3 - n + i])).collect();
    }
    let mut fixed: Vec<(String, String, char)> = indices
        .iter()
        .filter(|i| i.2.is_ascii_uppercase())
        .map(|(n, t, a)| (n.clone(), t.replace("const ", "").trim().to_string(), a.to_ascii_lowercase()))
        .collect();
    indices.retain(|i| !i.2.is_ascii_uppercase());
    if derived {
        // The derived declarations stand on a synthetic `x` index; their y/z block indices stay the launch's.
        if indices.iter().any(|i| i.2 == 'x') {
            return None;
        }
        indices.push((GLOBAL_X.to_string(), "long long".to_string(), 'x'));
        let texts: Vec<String> =
            pre.iter().filter_map(|p| if let Piece::Derived(n) = p { derived_decl(k, *n) } else { None }).collect();
        for (name, axis) in [("kp_by", 'y'), ("kp_bz", 'z')] {
            if texts.iter().any(|t| t.contains(name)) {
                fixed.push((name.to_string(), "long long".to_string(), axis));
            }
        }
    }
    // A grid-stride loop over one index, as the whole rest of the body.
    if indices.is_empty()
        && let [f] = sts[..]
        && let Some((name, ty, axis, bound)) = grid_stride_loop(k, f, &strides)
    {
        let inner = f.child_by_field_name("body")?;
        let body: Vec<Piece> = match inner.kind() {
            "compound_statement" => statements(inner).into_iter().map(Piece::Node).collect(),
            _ => vec![Piece::Node(inner)],
        };
        let index = IndexVar { name, ty, axis, bound: k.text_of(bound).to_string() };
        return finish(k, vec![index], body, head, fixed, &[bound]);
    }
    // `i = <global index>; while (i < B) { ...; i += <grid stride>; }`: the same as a grid-stride for loop.
    if let [(name, ty, axis)] = &indices[..]
        && *axis == 'x'
        && fixed.is_empty()
        && pre.is_empty()
        && let [w] = sts[..]
        && let Some((bound, body)) = while_stride(k, w, name, &strides)
    {
        let index = IndexVar {
            name: name.clone(),
            ty: ty.replace("const ", "").trim().to_string(),
            axis: 'x',
            bound: k.text_of(bound).to_string(),
        };
        return finish(k, vec![index], body.into_iter().map(Piece::Node).collect(), head, fixed, &[bound]);
    }
    if indices.is_empty()
        || !strides.is_empty()
        || indices.iter().enumerate().any(|(i, a)| indices[..i].iter().any(|b| b.2 == a.2 || b.0 == a.0))
    {
        return None;
    }
    let names: Vec<&str> = indices.iter().map(|i| i.0.as_str()).collect();
    let mut bounds: Vec<Option<Node>> = vec![None; indices.len()];
    let mut pieces: Vec<Piece> = pre;
    let guard =
        sts.first().copied().filter(|g| g.kind() == "if_statement" && g.child_by_field_name("alternative").is_none());
    let guard = guard?;
    let cond = guard.child_by_field_name("condition")?.child_by_field_name("value")?;
    let then = guard.child_by_field_name("consequence")?;
    let returns = single_statement(then).is_some_and(|s| s.kind() == "return_statement" && s.named_child_count() == 0);
    let mut record = |atom: Node<'t>, out: &str, flipped: &str, skip_when_true: bool| -> Option<Piece<'t>> {
        if let Some((x, b)) = bound_atom(k, atom, &names, out, flipped) {
            let at = names.iter().position(|n| *n == x).expect("named");
            if bounds[at].is_none() {
                bounds[at] = Some(b);
                return None;
            }
        }
        Some(Piece::Skip(atom, skip_when_true))
    };
    if returns {
        for atom in atoms(k, cond, "||") {
            if let Some(p) = record(atom, ">=", "<=", true) {
                pieces.push(p);
            }
        }
        pieces.extend(sts[1..].iter().copied().map(Piece::Node));
    } else if sts.len() == 1 {
        for atom in atoms(k, cond, "&&") {
            if let Some(p) = record(atom, "<", ">", false) {
                pieces.push(p);
            }
        }
        match then.kind() {
            "compound_statement" => pieces.extend(statements(then).into_iter().map(Piece::Node)),
            _ => pieces.push(Piece::Node(then)),
        }
    } else {
        return None;
    }
    let bounds: Vec<Node> = bounds.into_iter().collect::<Option<_>>()?;
    // The helpers of recognised index declarations (`long b = blockIdx.y * gridDim.x + blockIdx.x;`) are not re-declared.
    if pieces.iter().any(|p| matches!(p, Piece::Node(n) | Piece::Skip(n, _) | Piece::Derived(n) if names_in(k, *n).iter().any(|x| helpers.iter().any(|h| h == x)))) {
        return None;
    }
    let indices: Vec<IndexVar> = indices
        .into_iter()
        .zip(&bounds)
        .map(|((name, ty, axis), b)| IndexVar {
            name,
            ty: ty.replace("const ", "").trim().to_string(),
            axis,
            bound: k.text_of(*b).to_string(),
        })
        .collect();
    finish(k, indices, pieces, head, fixed, &bounds)
}

/// `T s = gridDim.x * blockDim.x;` (any order, casts): a grid stride's declaration.
fn is_stride_decl(k: &Kernel, st: Node) -> bool {
    let Some(d) = st.child_by_field_name("declarator").and_then(|d| d.child_by_field_name("value")) else {
        return false;
    };
    let b = bare(k.text_of(d));
    ["gridDim.x*blockDim.x", "blockDim.x*gridDim.x"].contains(&b.as_str())
}

/// `while (i < B) { ...; i += <grid stride>; }` with `i` assigned nowhere else: (B, the statements before the step).
fn while_stride<'t>(k: &Kernel, w: Node<'t>, i: &str, strides: &[String]) -> Option<(Node<'t>, Vec<Node<'t>>)> {
    if w.kind() != "while_statement" {
        return None;
    }
    let clause = w.child_by_field_name("condition")?;
    let cond = strip_parens(clause.child_by_field_name("value").unwrap_or(clause));
    let (x, bound) = bound_atom(k, cond, &[i], "<", ">")?;
    let body = statements(w.child_by_field_name("body").filter(|b| b.kind() == "compound_statement")?);
    let (step, rest) = body.split_last()?;
    let e =
        step.named_child(0).filter(|e| step.kind() == "expression_statement" && e.kind() == "assignment_expression")?;
    let r = bare(k.text_of(e.child_by_field_name("right")?));
    let stride_ok = strides.contains(&r) || ["gridDim.x*blockDim.x", "blockDim.x*gridDim.x"].contains(&r.as_str());
    let assigned_elsewhere = rest.iter().flat_map(|n| descendants(*n)).any(|d| {
        let target = match d.kind() {
            "assignment_expression" => d.child_by_field_name("left"),
            "update_expression" => d.child_by_field_name("argument"),
            _ => None,
        };
        target.is_some_and(|t| k.text_of(t) == i)
    });
    let ok = x == i
        && stride_ok
        && k.text_of(e.child_by_field_name("left")?) == i
        && k.text_of(e.child_by_field_name("operator")?) == "+="
        && !assigned_elsewhere
        && !rest
            .iter()
            .any(|n| descendants(*n).iter().any(|d| matches!(d.kind(), "continue_statement" | "break_statement")));
    ok.then(|| (bound, rest.to_vec()))
}

/// `for (T i = <global index>; i < B; i += <grid stride>)`: (i, T, axis, B).
fn grid_stride_loop<'t>(k: &Kernel, f: Node<'t>, strides: &[String]) -> Option<(String, String, char, Node<'t>)> {
    let init =
        f.child_by_field_name("initializer").filter(|d| f.kind() == "for_statement" && d.kind() == "declaration")?;
    let [(name, ty, axis)] = &index_decls(k, init)?[..] else { return None };
    if axis.is_ascii_uppercase() {
        return None;
    }
    let cond = strip_parens(f.child_by_field_name("condition")?);
    let (x, bound) = bound_atom(k, cond, &[name.as_str()], "<", ">")?;
    let step = f.child_by_field_name("update")?;
    let rhs = step.child_by_field_name("right").filter(|_| {
        step.kind() == "assignment_expression"
            && step.child_by_field_name("operator").is_some_and(|o| k.text_of(o) == "+=")
    })?;
    let r = bare(k.text_of(rhs));
    let stride_ok = strides.contains(&r)
        || [format!("gridDim.{axis}*blockDim.{axis}"), format!("blockDim.{axis}*gridDim.{axis}")].contains(&r);
    (stride_ok && x == *name && k.text_of(step.child_by_field_name("left")?) == name)
        .then(|| (name.clone(), ty.replace("const ", "").trim().to_string(), *axis, bound))
}

/// The checks shared by both forms: uniform bounds, a unit body free of the original mapping.
fn finish<'t>(
    k: &Kernel,
    mut indices: Vec<IndexVar>,
    pieces: Vec<Piece<'t>>,
    head: Vec<Node<'t>>,
    fixed: Vec<(String, String, char)>,
    bounds: &[Node],
) -> Option<Units<'t>> {
    let names: Vec<&str> = indices.iter().map(|i| i.name.as_str()).chain(fixed.iter().map(|f| f.0.as_str())).collect();
    let local_names: Vec<String> = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Node(n) | Piece::Derived(n) => Some(*n),
            _ => None,
        })
        .flat_map(|n| declared_in(k, n))
        .collect();
    for b in bounds {
        // A bound must be the same for every unit: no index, no local, no load.
        let uniform = descendants(*b).into_iter().all(|n| match n.kind() {
            "identifier" => {
                let name = k.text_of(n);
                !names.contains(&name)
                    && !local_names.iter().any(|l| l == name)
                    && k.param(name).is_none_or(|p| !p.pointer)
            }
            "subscript_expression" | "call_expression" | "assignment_expression" | "update_expression" | "ERROR" => {
                false
            }
            _ => true,
        });
        if !uniform {
            return None;
        }
    }
    // The unit body may not depend on the original mapping, nor assign an index.
    let mut restored: Vec<String> = Vec::new();
    for p in &pieces {
        let (Piece::Node(n) | Piece::Skip(n, _)) = p else { continue };
        if thread_bound(k, *n) {
            return None;
        }
        for d in descendants(*n) {
            let target = match d.kind() {
                "assignment_expression" => d.child_by_field_name("left"),
                "update_expression" => d.child_by_field_name("argument"),
                _ => None,
            };
            let Some(t) = target else { continue };
            let name = k.text_of(t);
            if names.contains(&name) {
                return None;
            }
            if t.kind() == "identifier" && k.param(name).is_some() && !restored.iter().any(|r| r == name) {
                restored.push(name.to_string());
            }
        }
    }
    // Fixed indices keep the launch's y/z: the units then run along x only.
    // (Or along x and y when the fixed indices are all on z: a batch.)
    let only_z = fixed.iter().all(|f| f.2 == 'z');
    if !fixed.is_empty()
        && (fixed.iter().any(|f| f.2 == 'x') || indices.iter().any(|i| i.axis == 'z' || (i.axis == 'y' && !only_z)))
    {
        return None;
    }
    // x last (fastest), then y, then z; but the index every store walks contiguously goes last
    // whatever its axis (`out[r * C + c]` with `r` on x), so neighbouring units store to neighbouring elements.
    indices.sort_by_key(|i| std::cmp::Reverse(i.axis));
    if let Some(fast) = contiguous_index(k, &indices) {
        let i = indices.remove(fast);
        indices.push(i);
    }
    Some(Units { indices, body: pieces, head, fixed, restored })
}

/// The one index (by position) that moves every global store by one element, from the kernel model;
/// `None` with fewer than two indices, no stores, or no single such index.
fn contiguous_index(k: &Kernel, indices: &[IndexVar]) -> Option<usize> {
    if indices.len() < 2 {
        return None;
    }
    let model = k.model()?;
    let stores: Vec<&Poly> = model
        .accesses
        .iter()
        .filter(|a| a.space == Space::Global && matches!(a.kind, AccessKind::Write | AccessKind::ReadWrite))
        .map(|a| &a.index)
        .collect();
    if stores.is_empty() {
        return None;
    }
    let dim = |axis: char| match axis {
        'x' => Dim::X,
        'y' => Dim::Y,
        _ => Dim::Z,
    };
    let unit: Vec<usize> = indices
        .iter()
        .enumerate()
        .filter(|(_, i)| stores.iter().all(|p| p.coefficient(&Atom::Tid(dim(i.axis))).as_constant() == Some(1)))
        .map(|(n, _)| n)
        .collect();
    match unit[..] {
        [one] => Some(one),
        _ => None,
    }
}

/// Whether every launch the search may pick has blocks of whole warps (any shape).
pub fn whole_warps(k: &Kernel) -> bool {
    k.block_threads().is_some_and(|ts| ts.iter().all(|t| t % 32 == 0))
}

/// `node`'s text with `edits` (file ranges inside it) applied.
pub fn edited(k: &Kernel, node: Node, edits: &[(std::ops::Range<usize>, String)]) -> String {
    let at = node.start_byte();
    crate::syntax::edited(k.text_of(node), edits.iter().map(|(r, with)| (r.start - at..r.end - at, with.clone())))
}

/// The compact text of `node` (whitespace removed).
pub fn flat(k: &Kernel, node: Node) -> String {
    compact(k.text, node)
}

/// Whether `n` is a loop statement.
pub fn is_loop(n: Node) -> bool {
    matches!(n.kind(), "for_statement" | "while_statement" | "do_statement" | "for_range_loop")
}

/// Whether `node` may leave its unit early (`return`, `break`, `continue`,
/// `goto`): a rewrite that runs it on some lanes only cannot take it.
pub fn leaves_unit(node: Node) -> bool {
    descendants(node)
        .iter()
        .any(|d| matches!(d.kind(), "return_statement" | "break_statement" | "continue_statement" | "goto_statement"))
}

/// Stores under `node`: assignments to and increments of subscripts and
/// dereferences, and atomic calls, as (pointer text, index node or the call).
pub fn stores<'t>(k: &Kernel, node: Node<'t>) -> Vec<(String, Node<'t>)> {
    let mut out = Vec::new();
    for d in descendants(node) {
        let target = match d.kind() {
            "assignment_expression" => d.child_by_field_name("left"),
            "update_expression" => d.child_by_field_name("argument"),
            "call_expression" => {
                let f = d.child_by_field_name("function").map(|f| k.text_of(f)).unwrap_or("");
                if f.starts_with("atomic") {
                    out.push((f.to_string(), d));
                }
                None
            }
            _ => None,
        };
        let Some(t) = target.map(strip_parens) else {
            continue;
        };
        match t.kind() {
            "subscript_expression" => {
                if let (Some(a), Some(i)) =
                    (t.child_by_field_name("argument"), t.child_by_field_name("indices").and_then(|i| i.named_child(0)))
                {
                    out.push((k.text_of(a).to_string(), i));
                }
            }
            "pointer_expression" | "field_expression" => out.push(("*".to_string(), t)),
            // A macro or call as the target (`AT(y, r, c) = v`): its arguments stand for the index.
            "call_expression" => {
                out.push((format!("{}()", t.child_by_field_name("function").map_or("", |f| k.text_of(f))), t))
            }
            _ => {}
        }
    }
    out
}

/// Names declared under `node` (declarations, parameters of loops).
pub fn declared_in(k: &Kernel, node: Node) -> Vec<String> {
    let mut out = Vec::new();
    for d in descendants(node) {
        if d.kind() == "declaration" {
            let mut cursor = d.walk();
            for decl in d.children_by_field_name("declarator", &mut cursor) {
                let mut name = decl;
                while let Some(inner) = name.child_by_field_name("declarator") {
                    name = inner;
                }
                out.push(k.text_of(name).to_string());
            }
        }
    }
    out
}
