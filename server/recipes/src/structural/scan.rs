//! A warp per scanned unit. A thread that walks its row keeping a running
//! sum and storing it at every element (a cumulative sum, inclusive:
//! `acc += e; y[c] = acc;`, or exclusive: `y[c] = acc; acc += e;`) reads and
//! writes one element per row per step, so neighbouring threads are a row
//! apart: every access is a separate memory transaction. Here each row goes
//! to one warp, which takes 32 consecutive elements at a time (coalesced),
//! scans them with shuffles (`__shfl_up_sync`, log2(32) steps), adds the
//! running total of the chunks before, and carries the chunk's total on. The
//! user's element expression and store are kept; the running value ends
//! with the row's total, as the statements after the loop expect.

use super::launch::{Tuning, launch_variants};
use super::recognize::{Piece, Units, declared_in, leaves_unit, render, stores, strip_parens, units, whole_warps};
use super::warp_units::{mentions, occurrences, walk_loop};
use super::with_units_view;
use crate::kernel::Kernel;
use crate::syntax::{descendants, indent_at, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
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

/// A scan loop: `for (T c = START; c < END; ++c) { acc += E; STORE }` (or the store first).
struct Scan<'t> {
    c: String,
    ty: String,
    start: Node<'t>,
    end: Node<'t>,
    acc: String,
    /// Declarations the element reads (computed only for elements in range).
    temps: Vec<Node<'t>>,
    /// The element added at each step.
    element: Node<'t>,
    store: Node<'t>,
    /// The store comes before the addition (an exclusive scan).
    exclusive: bool,
}

/// `acc += E;` or `acc = acc + E;` as (acc, E).
fn accumulation<'t>(k: &Kernel<'t>, st: Node<'t>) -> Option<(String, Node<'t>)> {
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
    match k.text_of(e.child_by_field_name("operator")?) {
        "+=" => Some((acc, right)),
        "=" => {
            let r = strip_parens(right);
            let (a, b) = (r.child_by_field_name("left")?, r.child_by_field_name("right")?);
            let plus = r.kind() == "binary_expression" && k.text_of(r.child_by_field_name("operator")?) == "+";
            (plus && k.text_of(strip_parens(a)) == acc).then_some((acc, b))
        }
        _ => None,
    }
}

fn scan_loop<'t>(k: &Kernel<'t>, f: Node<'t>) -> Option<Scan<'t>> {
    let (c, start, _) = walk_loop(k, f)?;
    let cond = strip_parens(f.child_by_field_name("condition")?);
    if k.text_of(cond.child_by_field_name("operator")?) != "<" {
        return None;
    }
    let end = cond.child_by_field_name("right")?;
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
    let (exclusive, (acc, element), store) = match (accumulation(k, a), accumulation(k, b)) {
        (Some(x), None) => (false, x, b),
        (None, Some(x)) => (true, x, a),
        _ => return None,
    };
    // The store writes at the loop's element and reads the running value; the
    // element does not depend on it; nothing else in the loop is declared or changed.
    let written = stores(k, store);
    let [(_, index)] = &written[..] else { return None };
    if store.kind() != "expression_statement"
        || !mentions(k, *index, &c)
        || !mentions(k, store, &acc)
        || mentions(k, element, &acc)
        || mentions(k, end, &acc)
        || !declared_in(k, f).iter().all(|d| d == &c || temps.iter().any(|t| declared_in(k, *t).contains(d)))
        || descendants(store).iter().any(|d| d.kind() == "assignment_expression" && d.parent() != Some(store))
    {
        return None;
    }
    // The temporaries serve the element only: the store may not read them, and they may not read the running value.
    let temp_names: Vec<String> = temps.iter().flat_map(|t| declared_in(k, *t)).collect();
    if temps.iter().any(|t| mentions(k, *t, &acc)) || temp_names.iter().any(|n| mentions(k, store, n)) {
        return None;
    }
    Some(Scan { c, ty, start, end, acc, temps: temps.to_vec(), element, store, exclusive })
}

fn generate(k: &Kernel, u: &Units) -> Option<String> {
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
            lines.extend(scan_lines(k, &s)?);
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
        if leaves_unit(n) || n.kind() == "declaration" || descendants(n).iter().any(|d| super::recognize::is_loop(*d)) {
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
    Some(u.warp_loop(&prologue, comment, &inner, &ind, &outer))
}

/// The chunked scan replacing one scan loop, as lines (indented relative to each other).
fn scan_lines(k: &Kernel, s: &Scan) -> Option<Vec<String>> {
    let (c, ty, acc) = (&s.c, &s.ty, &s.acc);
    let (start, end, element) = (k.text_of(s.start), k.text_of(s.end), k.text_of(s.element));
    // The store with the running value replaced by this element's prefix.
    let edits: Vec<_> =
        occurrences(k, s.store, acc).into_iter().map(|at| (at..at + acc.len(), "kp_acc".to_string())).collect();
    let store = render(k, Piece::Node(s.store), &edits, "    ")?;
    let mut temps = String::new();
    for t in &s.temps {
        temps.push_str(&render(k, Piece::Node(*t), &[], "    ")?);
        temps.push(' ');
    }
    let prefix = if s.exclusive {
        // The lanes before this one: the inclusive scan one lane up, nothing for lane 0.
        "decltype(kp_e) kp_x = __shfl_up_sync(0xffffffffu, kp_e, 1);\n    if (kp_lane == 0) kp_x = 0;\n    const decltype(".to_string()
            + acc
            + ") kp_acc = "
            + acc
            + " + kp_x;"
    } else {
        format!("const decltype({acc}) kp_acc = {acc} + kp_e;")
    };
    Some(vec![format!(
        "for ({ty} kp_c0 = {start}; kp_c0 < ({end}); kp_c0 += 32) {{
  const {ty} {c} = kp_c0 + kp_lane;
  const bool kp_in = {c} < ({end});
  decltype({acc}) kp_e = 0;
  if (kp_in) {{ {temps}kp_e = {element}; }}
  // Inclusive scan of the 32 elements across the lanes.
  for (int kp_o = 1; kp_o < 32; kp_o <<= 1) {{
    const decltype(kp_e) kp_t = __shfl_up_sync(0xffffffffu, kp_e, kp_o);
    if (kp_lane >= kp_o) kp_e += kp_t;
  }}
  {{
    {prefix}
    if (kp_in) {store}
  }}
  // The chunk's total (lane 31's inclusive value) carries on.
  {acc} += __shfl_sync(0xffffffffu, kp_e, 31);
}}"
    )])
}

fn rewrites(k: &Kernel) -> Vec<Rewrite> {
    let Some(u) = units(k) else { return Vec::new() };
    if !whole_warps(k) {
        return Vec::new();
    }
    let Some(text) = generate(k, &u) else { return Vec::new() };
    let source = k.with_body(&text);
    let note = format!(
        "one warp per unit ({}): its running sum scanned 32 elements at a time with shuffles",
        u.names().join(", ")
    );
    launch_variants(k, &Rewrite { source, note }, &u, Tuning::Warps)
}
