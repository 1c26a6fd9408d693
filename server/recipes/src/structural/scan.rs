//! A warp per scanned unit. A thread that walks its row keeping a running
//! sum or product and storing it at every element (a cumulative sum,
//! inclusive: `acc += e; y[c] = acc;`, or exclusive: `y[c] = acc; acc += e;`;
//! `acc *= e`; a masked `if (m) acc += e;`; walking up or down the row) reads and
//! writes one element per row per step, so neighbouring threads are a row
//! apart: every access is a separate memory transaction. Here each row goes
//! to one warp, which takes 32 consecutive elements at a time (coalesced),
//! scans them with shuffles (`__shfl_up_sync`, log2(32) steps), adds the
//! running total of the chunks before, and carries the chunk's total on. The
//! user's element expression and store are kept; the running value ends
//! with the row's total, as the statements after the loop expect.
//!
//! With one chunk a step, each lane has one load in flight, then a chain of
//! shuffles that depends on it: at ~16 warps an SM the memory latency is not
//! hidden (0.39-0.93 ms on an H100 for 2048 rows of 32768 floats, where
//! torch.compile takes 0.23-0.27 ms). So the rewrite also comes with 4 and 8
//! consecutive chunks a step ([`CHUNKS`]): each lane first loads its element of
//! every chunk (K independent loads in flight, into a register array under full
//! unrolling), the K shuffle scans run side by side, then the chunks' prefixes
//! are stored in the loop's order, each chunk's total carried on. Measured on
//! an H100 (KernelBench 89-92, launch block = 256): 0.56 ms with one chunk,
//! 0.25 with 4, 0.21-0.23 with 8; the masked cumsum (93), whose element loads
//! x only after its mask byte, 0.86, 0.65 and 0.63. A mask read at the element's own index is
//! data, not a bounds test, so the element's load now goes out beside the mask's.

use super::launch::{Tuning, launch_variants};
use super::units_text::{UnitsText, render};
use super::warp_units::{mentions, occurrences, walk_loop};
use super::with_units_view;
use crate::kernel::Kernel;
use crate::syntax::{descendants, indent_at, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::units::recognize::{
    Piece, Units, declared_in, leaves_unit, stores, strip_parens, units, whole_warps,
};
use tree_sitter::Node;

pub struct WarpScan;

impl Recipe for WarpScan {
    fn name(&self) -> &'static str {
        "WarpScan"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::RowWalk, Code::UncoalescedAccess, Code::Uncoalesced, Code::MemoryCoalescing]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        with_units_view(text, kernel, rewrites)
    }
}

/// A scan loop: `for (T c = START; c < END; ++c) { acc += E; STORE }` (or the store first), or
/// `for (T c = HI; c >= LO; --c)` walking down.
struct Scan<'t> {
    c: String,
    ty: String,
    /// Forward: the first element and the bound; down: the first (highest) element and the lowest.
    start: Node<'t>,
    end: Node<'t>,
    down: bool,
    acc: String,
    op: Op,
    /// Declarations the element reads (computed only for elements in range).
    temps: Vec<Node<'t>>,
    /// The element combined at each step, as C (`(m) ? (e) : 0` for a masked one).
    element: String,
    store: Node<'t>,
    /// The store comes before the addition (an exclusive scan).
    exclusive: bool,
}

/// The running value's operator.
#[derive(Clone, Copy, PartialEq)]
enum Op {
    Add,
    Mul,
}

impl Op {
    fn identity(self) -> &'static str {
        match self {
            Op::Add => "0",
            Op::Mul => "1",
        }
    }
    fn sign(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Mul => "*",
        }
    }
}

/// `acc += E;`, `acc = acc + E;`, `acc *= E;` or `acc = acc * E;`, possibly under `if (M)`:
/// (acc, the operator, the nodes the element reads, the element as C).
fn accumulation<'t>(k: &Kernel<'t>, st: Node<'t>) -> Option<(String, Op, Vec<Node<'t>>, String)> {
    if st.kind() == "if_statement" && st.child_by_field_name("alternative").is_none() {
        let cond = st.child_by_field_name("condition")?.child_by_field_name("value")?;
        let (acc, op, mut reads, e) =
            accumulation(k, crate::syntax::single_statement(st.child_by_field_name("consequence")?)?)?;
        reads.push(cond);
        // A mask read at the element's own index (`if (m[i]) acc += x[i];`) is data, not a bounds
        // test: x[i] is loaded beside m[i] rather than after it, so a lane's loads do not wait in
        // turn (93's masked cumsum: 0.63 ms against 0.25 for the unmasked 89).
        let masked = match same_index_load(k, cond, reads[0]) {
            Some(x) => format!(
                "[&] {{ const auto kp_v = ({x}); return ({}) ? kp_v : decltype(kp_v)({}); }}()",
                k.text_of(cond),
                op.identity()
            ),
            None => format!("({}) ? ({e}) : ({})", k.text_of(cond), op.identity()),
        };
        return Some((acc, op, reads, masked));
    }
    if st.kind() != "expression_statement" {
        return None;
    }
    let e = strip_parens(st.named_child(0)?);
    if e.kind() != "assignment_expression" {
        return None;
    }
    let left = strip_parens(e.child_by_field_name("left")?);
    let right = e.child_by_field_name("right")?;
    if left.kind() != "identifier" {
        return None;
    }
    let acc = k.text_of(left).to_string();
    let (op, element) = match k.text_of(e.child_by_field_name("operator")?) {
        "+=" => (Op::Add, right),
        "*=" => (Op::Mul, right),
        "=" => {
            let r = strip_parens(right);
            let (a, b) = (r.child_by_field_name("left")?, r.child_by_field_name("right")?);
            let op = match k.text_of(r.child_by_field_name("operator")?) {
                "+" => Op::Add,
                "*" => Op::Mul,
                _ => return None,
            };
            (r.kind() == "binary_expression" && k.text_of(strip_parens(a)) == acc).then_some((op, b))?
        }
        _ => return None,
    };
    Some((acc, op, vec![element], k.text_of(element).to_string()))
}

/// The element `e` as text where it is one load `X[I]` and the mask `cond` reads another buffer
/// at the same index (`M[I]`, or `M[I]` compared with a literal): both span the element.
fn same_index_load(k: &Kernel, cond: Node, e: Node) -> Option<String> {
    let subscript = |n: Node| -> Option<(String, String)> {
        let n = strip_parens(n);
        if n.kind() != "subscript_expression" {
            return None;
        }
        let array = strip_parens(n.child_by_field_name("argument")?);
        let index = n.child_by_field_name("indices")?.named_child(0)?;
        (array.kind() == "identifier").then(|| (k.text_of(array).to_string(), k.text_of(index).to_string()))
    };
    let c = strip_parens(cond);
    let mask = match c.kind() {
        "binary_expression" => {
            let (l, r) = (c.child_by_field_name("left")?, c.child_by_field_name("right")?);
            (strip_parens(r).kind() == "number_literal").then_some(())?;
            subscript(l)?
        }
        _ => subscript(c)?,
    };
    let load = subscript(e)?;
    (load.1 == mask.1 && load.0 != mask.0).then(|| k.text_of(strip_parens(e)).to_string())
}

/// `for (T c = HI; c >= LO; --c)` with a signed `T` (an unsigned counter would wrap): (c, HI, LO).
fn down_loop<'t>(k: &Kernel, f: Node<'t>) -> Option<(String, Node<'t>, Node<'t>)> {
    let init =
        f.child_by_field_name("initializer").filter(|d| f.kind() == "for_statement" && d.kind() == "declaration")?;
    let ty = k.text_of(init.child_by_field_name("type")?);
    if !["int", "long", "long long", "int64_t", "ptrdiff_t", "int32_t"].contains(&ty)
        || k.text_of(init).contains("unsigned")
    {
        return None;
    }
    let decl = init.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let c = k.text_of(decl.child_by_field_name("declarator")?).to_string();
    let cond = strip_parens(f.child_by_field_name("condition")?);
    if cond.kind() != "binary_expression"
        || k.text_of(cond.child_by_field_name("operator")?) != ">="
        || k.text_of(cond.child_by_field_name("left")?) != c
    {
        return None;
    }
    let step = crate::syntax::compact(k.text, f.child_by_field_name("update")?);
    let steps = [format!("--{c}"), format!("{c}--"), format!("{c}-=1"), format!("{c}={c}-1")];
    steps.contains(&step).then(|| {
        (c, decl.child_by_field_name("value").expect("init value"), cond.child_by_field_name("right").expect("bound"))
    })
}

/// Whether a temporary's declaration loads or calls (a subscript, a call, a dereference, a
/// pointer parameter): it then runs only for elements in range.
fn loads_memory(k: &Kernel, t: Node) -> bool {
    descendants(t).iter().any(|d| {
        matches!(d.kind(), "subscript_expression" | "call_expression" | "pointer_expression")
            || (d.kind() == "identifier" && k.param(k.text_of(*d)).is_some_and(|p| p.pointer))
    })
}

fn scan_loop<'t>(k: &Kernel<'t>, f: Node<'t>) -> Option<Scan<'t>> {
    let (c, start, end, down) = match walk_loop(k, f) {
        Some((c, start, _)) => {
            let cond = strip_parens(f.child_by_field_name("condition")?);
            if k.text_of(cond.child_by_field_name("operator")?) != "<" {
                return None;
            }
            (c, start, cond.child_by_field_name("right")?, false)
        }
        None => {
            let (c, hi, lo) = down_loop(k, f)?;
            (c, hi, lo, true)
        }
    };
    let init = f.child_by_field_name("initializer")?;
    let ty = k.text_of(init.child_by_field_name("type")?).to_string();
    let body = f.child_by_field_name("body")?;
    // Declarations of the element's temporaries first (`double v = x[...];`), then the two statements.
    let all = statements(body);
    let split = all.len().checked_sub(2)?;
    let (temps, rest) = all.split_at(split);
    let [a, b] = rest[..] else { return None };
    if temps.iter().any(|t| t.kind() != "declaration") {
        return None;
    }
    let (exclusive, (acc, op, reads, element), store) = match (accumulation(k, a), accumulation(k, b)) {
        (Some(x), None) => (false, x, b),
        (None, Some(x)) => (true, x, a),
        _ => return None,
    };
    // The store writes at the loop's element and reads the running value; the
    // element does not depend on it; nothing else in the loop is declared or changed.
    let written = stores(k, store);
    let [(_, index)] = &written[..] else { return None };
    // The index names the element directly or through a temporary that does (`size_t at = r * cols + c;`).
    let via: Vec<String> =
        temps.iter().filter(|t| mentions(k, **t, &c)).flat_map(|t| declared_in(k, *t)).chain([c.clone()]).collect();
    if store.kind() != "expression_statement"
        || !via.iter().any(|v| mentions(k, *index, v))
        || !mentions(k, store, &acc)
        || reads.iter().any(|r| mentions(k, *r, &acc))
        || mentions(k, end, &acc)
        || mentions(k, start, &acc)
        || !declared_in(k, f).iter().all(|d| d == &c || temps.iter().any(|t| declared_in(k, *t).contains(d)))
        || descendants(store).iter().any(|d| d.kind() == "assignment_expression" && d.parent() != Some(store))
    {
        return None;
    }
    // Temporaries may not read the running value. Those that load (or call) serve the element only:
    // they run for elements in range, where the store cannot see them. Index arithmetic
    // (`size_t at = r * cols + c;`) runs on every lane, so the store may use it.
    let loading: Vec<String> = temps.iter().filter(|t| loads_memory(k, **t)).flat_map(|t| declared_in(k, *t)).collect();
    if temps.iter().any(|t| mentions(k, *t, &acc))
        || loading.iter().any(|n| mentions(k, store, n))
        || temps.iter().any(|t| !loads_memory(k, *t) && loading.iter().any(|n| mentions(k, *t, n)))
    {
        return None;
    }
    Some(Scan { c, ty, start, end, down, acc, op, temps: temps.to_vec(), element, store, exclusive })
}

/// Chunks of 32 a warp takes a step besides one: K independent loads in flight per lane.
const CHUNKS: [usize; 2] = [4, 8];

/// The kernel's body with every scan loop walked `chunks` chunks of 32 a step.
fn generate(k: &Kernel, u: &Units, chunks: usize) -> Option<String> {
    let body = k.body();
    let outer = indent_at(k.text, body.start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let mut lines: Vec<String> = Vec::new();
    let mut scanned = 0;
    for piece in &u.body {
        let Piece::Node(n) = *piece else {
            lines.push(render(k, *piece, &[], "")?);
            continue;
        };
        if let Some(s) = scan_loop(k, n) {
            lines.extend(scan_lines(k, &s, chunks)?);
            scanned += 1;
            continue;
        }
        // Every lane runs the other statements (they see the same values); one that stores runs on lane 0.
        if stores(k, n).is_empty() {
            if descendants(n).iter().any(|d| d.kind() == "for_statement" || d.kind() == "while_statement") {
                return None;
            }
            lines.push(render(k, *piece, &[], "")?);
            continue;
        }
        if leaves_unit(n)
            || n.kind() == "declaration"
            || descendants(n).iter().any(|d| kernelpro_source::units::recognize::is_loop(*d))
        {
            return None;
        }
        // Lines are indented relative to each other: the unit loop's indentation is added to each.
        lines.push(format!(
            "if (kp_lane == 0) {{
  {}
}}",
            render(k, *piece, &[], "  ")?
        ));
        lines.push("__syncwarp();".to_string());
    }
    if scanned == 0 {
        return None;
    }
    let mut inner = String::new();
    for l in u.rebind("kp_u").lines().chain(lines.iter().flat_map(|l| l.lines())) {
        inner.push_str(&format!("{ind2}{l}\n"));
    }
    let prologue = u.prologue(k, &ind)?;
    let comment = "One warp per unit; lanes scan its elements 32 at a time with shuffles (kernelpro WarpScan).";
    Some(u.warp_loop(&prologue, comment, &inner, &ind, outer))
}

/// The store with the running value replaced by this element's prefix (`kp_acc`), the index
/// temporaries (every lane runs them: the store may use them) one a line, and the loading ones
/// (run for elements in range only) on one line.
fn store_and_temps(k: &Kernel, s: &Scan) -> Option<(String, Vec<String>, String)> {
    let acc = &s.acc;
    let edits: Vec<_> =
        occurrences(k, s.store, acc).into_iter().map(|at| (at..at + acc.len(), "kp_acc".to_string())).collect();
    let store = render(k, Piece::Node(s.store), &edits, "    ")?;
    let (mut index, mut temps) = (Vec::new(), String::new());
    for t in &s.temps {
        let line = render(k, Piece::Node(*t), &[], "    ")?;
        if loads_memory(k, *t) {
            temps.push_str(&line);
            temps.push(' ');
        } else {
            index.push(line);
        }
    }
    Some((store, index, temps))
}

/// A chunk's prefix at this lane, `kp_acc`: the running value combined with the lane's inclusive
/// scan value `e`, or for an exclusive scan with the one a lane up (the identity on lane 0, its
/// temporary declared with the type of `x_ty`).
fn prefix(s: &Scan, e: &str, x_ty: &str) -> String {
    let (acc, id, op) = (&s.acc, s.op.identity(), s.op.sign());
    if s.exclusive {
        format!(
            "decltype({x_ty}) kp_x = __shfl_up_sync(0xffffffffu, {e}, 1);\n    if (kp_lane == 0) kp_x = {id};\n    const decltype({acc}) kp_acc = {acc} {op} kp_x;"
        )
    } else {
        format!("const decltype({acc}) kp_acc = {acc} {op} {e};")
    }
}

/// The walk over the row, `step` elements a step in the loop's own direction: the loop's head,
/// the lane's element (the group's first, `kp_c0`, moved by `offsets` that way) and its range test.
fn walk(k: &Kernel, s: &Scan, step: usize, offsets: &[&str]) -> (String, String, String) {
    let (c, ty) = (&s.c, &s.ty);
    let (start, end) = (k.text_of(s.start), k.text_of(s.end));
    let (cmp, sign) = if s.down { (">=", "-") } else { ("<", "+") };
    let this = std::iter::once("kp_c0").chain(offsets.iter().copied()).collect::<Vec<_>>().join(&format!(" {sign} "));
    (
        format!("for ({ty} kp_c0 = {start}; kp_c0 {cmp} ({end}); kp_c0 {sign}= {step})"),
        this,
        format!("{c} {cmp} ({end})"),
    )
}

/// The chunked scan replacing one scan loop, as lines (indented relative to each other): one
/// chunk of 32 a step, or `chunks` consecutive ones ([`chunked_lines`]).
fn scan_lines(k: &Kernel, s: &Scan, chunks: usize) -> Option<Vec<String>> {
    if chunks > 1 {
        return chunked_lines(k, s, chunks);
    }
    let (c, ty, acc, element) = (&s.c, &s.ty, &s.acc, &s.element);
    let (id, op) = (s.op.identity(), s.op.sign());
    let (store, index, temps) = store_and_temps(k, s)?;
    let index: String = index.iter().map(|l| format!("\n  {l}")).collect();
    let prefix = prefix(s, "kp_e", "kp_e");
    // Lane l takes the l-th element of each chunk of 32, in the loop's own order.
    let (head, this, in_range) = walk(k, s, 32, &["kp_lane"]);
    Some(vec![format!(
        "{head} {{
  const {ty} {c} = {this};
  const bool kp_in = {in_range};{index}
  decltype({acc}) kp_e = {id};
  if (kp_in) {{ {temps}kp_e = {element}; }}
  // Inclusive scan of the 32 elements across the lanes.
  for (int kp_o = 1; kp_o < 32; kp_o <<= 1) {{
    const decltype(kp_e) kp_t = __shfl_up_sync(0xffffffffu, kp_e, kp_o);
    if (kp_lane >= kp_o) kp_e = kp_e {op} kp_t;
  }}
  {{
    {prefix}
    if (kp_in) {store}
  }}
  // The chunk's total (lane 31's inclusive value) carries on.
  {acc} = {acc} {op} __shfl_sync(0xffffffffu, kp_e, 31);
}}"
    )])
}

/// `chunks` consecutive chunks of 32 a step (the loop steps by `32 * chunks`, its condition on the
/// group's first element): each lane loads its element of every chunk into `kp_e[j]` (the identity
/// out of range), the chunks' inclusive shuffle scans run side by side, then in the loop's order
/// each chunk's prefix is stored where in range and its total carried on. Under full unrolling
/// `kp_e` is indexed by constants and stays in registers.
fn chunked_lines(k: &Kernel, s: &Scan, chunks: usize) -> Option<Vec<String>> {
    let (c, ty, acc, element) = (&s.c, &s.ty, &s.acc, &s.element);
    let (id, op) = (s.op.identity(), s.op.sign());
    let step = 32 * chunks;
    let (store, index, temps) = store_and_temps(k, s)?;
    let index: String = index.iter().map(|l| format!("\n    {l}")).collect();
    let prefix = prefix(s, "kp_e[kp_j]", acc);
    // Lane l takes element l of chunk j, chunk j starting 32 * j elements on in the loop's order.
    let (head, this, in_range) = walk(k, s, step, &["kp_j * 32", "kp_lane"]);
    let element_at = format!("const {ty} {c} = {this};\n    const bool kp_in = {in_range};{index}");
    Some(vec![format!(
        "{head} {{
  // {chunks} chunks of 32: every lane loads its element of each first ({chunks} loads in flight).
  decltype({acc}) kp_e[{chunks}];
  #pragma unroll
  for (int kp_j = 0; kp_j < {chunks}; ++kp_j) {{
    {element_at}
    kp_e[kp_j] = {id};
    if (kp_in) {{ {temps}kp_e[kp_j] = {element}; }}
  }}
  // Inclusive scans of each chunk's 32 elements across the lanes, the chunks side by side.
  #pragma unroll
  for (int kp_o = 1; kp_o < 32; kp_o <<= 1) {{
    #pragma unroll
    for (int kp_j = 0; kp_j < {chunks}; ++kp_j) {{
      const decltype({acc}) kp_t = __shfl_up_sync(0xffffffffu, kp_e[kp_j], kp_o);
      if (kp_lane >= kp_o) kp_e[kp_j] = kp_e[kp_j] {op} kp_t;
    }}
  }}
  // In the loop's order: each chunk's prefix stored, its total (lane 31's inclusive value) carried on.
  #pragma unroll
  for (int kp_j = 0; kp_j < {chunks}; ++kp_j) {{
    {element_at}
    {prefix}
    if (kp_in) {store}
    {acc} = {acc} {op} __shfl_sync(0xffffffffu, kp_e[kp_j], 31);
  }}
}}"
    )])
}

fn rewrites(k: &Kernel) -> Vec<Rewrite> {
    let Some(u) = units(k) else { return Vec::new() };
    if !whole_warps(k) {
        return Vec::new();
    }
    let Some(text) = generate(k, &u, 1) else { return Vec::new() };
    let note = format!(
        "one warp per unit ({}): its running value scanned 32 elements at a time with shuffles",
        u.names().join(", ")
    );
    let mut out = launch_variants(k, &Rewrite { source: k.with_body(&text), note: note.clone() }, &u, Tuning::Warps);
    // The one-chunk form's first launch variant (its note's tail): the tuner's first choice.
    let first_variant = out.iter().find_map(|r| r.note.strip_prefix(note.as_str()).filter(|t| !t.is_empty()));
    let first_variant = first_variant.map(str::to_string);
    for chunks in CHUNKS {
        let Some(text) = generate(k, &u, chunks) else { continue };
        let note = format!("{note}, {chunks} chunks in flight");
        let base = Rewrite { source: k.with_body(&text), note: note.clone() };
        let variants = launch_variants(k, &base, &u, Tuning::Warps);
        // 8 chunks: under the user's launch and the first variant only, 6 candidates added in all.
        let kept = |r: &Rewrite| {
            let tail = r.note.strip_prefix(note.as_str());
            chunks < 8 || tail == Some("") || tail.is_some() && tail == first_variant.as_deref()
        };
        out.extend(variants.into_iter().filter(kept));
    }
    out
}
