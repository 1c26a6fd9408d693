//! Views of a kernel in styles the units recogniser reads, for kernels as
//! other people write them (issue 29's fetched corpus). Each view is the same
//! kernel under every launch its spec may pick, as a whole file whose kernel
//! body alone changed; every structural rewrite then replaces the whole body
//! and re-maps the units, so only what a view keeps (the units, their bounds,
//! the per-unit statements) reaches a candidate.
//!
//! - [`without_pragmas`]: the body's `#pragma unroll` lines left out.
//! - [`expand_macros`]: the body's function-like macros (and object-like
//!   macros of the thread index) expanded, so subscripts a macro hides are seen.
//! - [`split_flat`]: a flat index split by `/` and `%` read as a row and a column.
//! - [`exact_launch_guard`]: a kernel with no bounds guard whose launch covers
//!   exactly `P` threads on an axis (`P` an integer parameter or a constant of
//!   the file with that value under every launch) gets `if (x >= P) return;`.
//! - [`inline_index_locals`]: index arithmetic kept in locals
//!   (`int idx_col = ix * ny + iy; B[idx_col] = ...`, `int tid = ...;
//!   for (int i = tid; ...)`) is written at its uses.
//! - [`merged_guards`]: the same guard split in two (`float s = 0; if (g) {
//!   loop } if (g) store`) becomes one guarded block holding the accumulator.
//! - [`redundant_threads`]: `if (tid < N && row < B) { BODY }` where BODY
//!   never reads `tid`: the N threads of a row all do the same work and store
//!   the same values, so the units are the rows (`row` on x). Tried before
//!   every other view (read as written, the units would be the repeats).
//! - [`kahan_as_sum`]: a Kahan-compensated sum (`y = x - c; t = s + y;
//!   c = (t - s) - y; s = t;`) read as `s += x`: the lanes' partial sums are
//!   then combined pairwise, which keeps the error small without the
//!   compensation (the candidate says so in its note).

use super::Kernel;
use super::recognize::{bare, index_decls, strip_parens};
use crate::syntax::{compact, descendants, edited, has_side_effects, single_statement, statements};
use tree_sitter::Node;

/// A view's text and what a candidate made from it must say (empty: nothing).
pub struct View {
    pub text: String,
    pub note: &'static str,
}

/// Every view below of `k`'s file, and their compositions (guard, then inlined locals).
pub fn all(k: &Kernel) -> Vec<View> {
    let mut out: Vec<View> = Vec::new();
    let push = |text: Option<String>, note: &'static str, out: &mut Vec<View>| {
        if let Some(text) = text
            && !out.iter().any(|v| v.text == text)
        {
            out.push(View { text, note });
        }
    };
    let guarded = exact_launch_guard(k);
    push(guarded.clone(), "", &mut out);
    let guarded = guarded.as_deref().and_then(|g| k.reread(g));
    for base in std::iter::once(k).chain(guarded.as_ref()) {
        push(inline_index_locals(base), "", &mut out);
        push(merged_guards(base), "", &mut out);
        let kahan = kahan_as_sum(base);
        push(kahan.clone(), KAHAN_NOTE, &mut out);
        if let Some(kahan) = kahan.as_deref().and_then(|t| k.reread(t)) {
            push(inline_index_locals(&kahan), KAHAN_NOTE, &mut out);
        }
    }
    out
}

pub const REDUNDANT_NOTE: &str =
    "the threads that repeated their row's work (the same values stored by each) are one unit per row";

const KAHAN_NOTE: &str =
    "the Kahan compensation is dropped: each lane sums its share, the lanes' sums combine pairwise";

/// `T NAME = VALUE;` with one declarator: (type, name node, value node).
fn decl<'t>(k: &Kernel, st: Node<'t>) -> Option<(String, Node<'t>, Node<'t>)> {
    if st.kind() != "declaration"
        || st.named_children(&mut st.walk()).filter(|c| c.kind() == "init_declarator").count() != 1
    {
        return None;
    }
    let d = st.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let name = d.child_by_field_name("declarator").filter(|n| n.kind() == "identifier")?;
    Some((k.text_of(st.child_by_field_name("type")?).to_string(), name, d.child_by_field_name("value")?))
}

/// `text` with byte ranges replaced (ranges do not overlap).
/// The integer constants of the file: `#define NAME 4096`, `const int NAME = 32;`, `constexpr int NAME = 32;`.
fn file_constants(text: &str) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix('#').map(str::trim_start).and_then(|d| d.strip_prefix("define")) {
            let mut parts = rest.split_whitespace();
            if let (Some(n), Some(v), None) = (parts.next(), parts.next(), parts.next())
                && let Ok(v) = v.trim_matches(|c| c == '(' || c == ')').parse::<i64>()
                && n.chars().all(|c| c.is_alphanumeric() || c == '_')
            {
                out.push((n.to_string(), v));
            }
            continue;
        }
        let l = l.strip_prefix("constexpr").or_else(|| l.strip_prefix("const")).map(str::trim_start);
        if let Some(rest) = l.and_then(|r| r.strip_prefix("int ")).and_then(|r| r.strip_suffix(';'))
            && let Some((n, v)) = rest.split_once('=')
            && let Ok(v) = v.trim().parse::<i64>()
        {
            out.push((n.trim().to_string(), v));
        }
    }
    out
}

/// See the module's doc: a guard from the launch, for a kernel with none.
pub fn exact_launch_guard(k: &Kernel) -> Option<String> {
    let text = k.text;
    let body = k.body();
    let sts = statements(body);
    // No guard of its own: no early return, no top-level `if`, no barrier (a guard above one would hang),
    // no grid-stride loop (its own bound guards it).
    if descendants(body).iter().any(|d| d.kind() == "return_statement")
        || k.text_of(body).contains("gridDim")
        || sts.iter().any(|s| s.kind() == "if_statement")
        || k.text_of(body).contains("__syncthreads")
    {
        return None;
    }
    let launches = k.launches()?;
    if launches.is_empty() {
        return None;
    }
    // The global index locals on x and y (plain `blockIdx * blockDim + threadIdx`), never reassigned.
    let written = super::recognize::assigned_in(k, body);
    let mut axes: Vec<(usize, String, usize)> = Vec::new(); // (axis, name, statement index)
    for (at, st) in sts.iter().enumerate() {
        for (axis, a) in ["x", "y"].iter().enumerate() {
            if let Some(v) = k.index_decl(*st, a)
                && !written.contains(&v.as_str())
            {
                axes.push((axis, v, at));
            }
        }
    }
    if axes.is_empty() || axes.iter().any(|(a, _, _)| launches.iter().any(|l| l.grid[*a] == 0)) {
        return None;
    }
    // Any use of the other axes' thread or block index leaves it alone (a 3D launch, a batch on z).
    let used_axes: Vec<usize> = axes.iter().map(|(a, _, _)| *a).collect();
    let body_text = k.text_of(body);
    for (axis, a) in ["x", "y", "z"].iter().enumerate() {
        if !used_axes.contains(&axis) && body_text.contains(&format!("threadIdx.{a}")) {
            return None;
        }
    }
    // Candidate extents: integer parameters (their value under each launch) and the file's constants.
    let constants = file_constants(text);
    let value = |n: &str, l: &super::Launch| -> Option<i64> {
        if let Some(p) = k.param(n) {
            if p.pointer {
                return None;
            }
            return l.ints.iter().find(|(a, _)| a == n).map(|(_, v)| *v);
        }
        constants.iter().find(|(c, _)| c == n).map(|(_, v)| *v)
    };
    let names: Vec<String> = k
        .func
        .params
        .iter()
        .filter(|p| !p.pointer)
        .map(|p| p.name.clone())
        .chain(constants.iter().map(|(n, _)| n.clone()))
        .collect();
    let covers =
        |n: &str, axis: usize| launches.iter().all(|l| value(n, l) == Some(l.grid[axis] as i64 * l.block[axis] as i64));
    // Row strides the subscripts use (`y * W + x`), stores first: the x extent is the store's stride.
    let stores_first: Vec<String> = {
        let mut subs: Vec<(bool, String)> = descendants(body)
            .into_iter()
            .filter(|d| d.kind() == "subscript_expression")
            .map(|d| {
                let store = d
                    .parent()
                    .is_some_and(|p| p.kind() == "assignment_expression" && p.child_by_field_name("left") == Some(d));
                (!store, compact(k.text, d))
            })
            .collect();
        subs.sort_by_key(|(load, _)| *load);
        subs.into_iter().map(|(_, s)| s).collect()
    };
    let y_name = axes.iter().find(|(a, _, _)| *a == 1).map(|(_, n, _)| n.clone());
    let mut chosen: Vec<(String, String)> = Vec::new(); // (index, extent)
    for (axis, v, _) in &axes {
        let fits: Vec<&String> = names.iter().filter(|n| covers(n, *axis)).collect();
        let pick = match (*axis, &y_name) {
            (0, Some(y)) => fits
                .iter()
                .find(|n| {
                    stores_first.iter().any(|s| s.contains(&format!("{y}*{n}")) || s.contains(&format!("{n}*{y}")))
                })
                .or(fits.first())
                .copied(),
            _ => fits.iter().find(|n| chosen.iter().all(|(_, e)| e != **n)).or(fits.first()).copied(),
        };
        chosen.push((v.clone(), pick?.clone()));
    }
    let cond = chosen.iter().map(|(v, e)| format!("{v} >= {e}")).collect::<Vec<_>>().join(" || ");
    let after = sts[axes.iter().map(|(_, _, at)| *at).max()?];
    let mut out = text.to_string();
    out.insert_str(after.end_byte(), &format!(" if ({cond}) return;"));
    Some(out)
}

/// Whether `v` is a plain global index (`blockIdx.a * blockDim.a + threadIdx.a`, any order).
fn plain_index(k: &Kernel, st: Node) -> bool {
    ["x", "y", "z"].iter().any(|a| k.index_decl(st, a).is_some())
}

/// See the module's doc: index locals written at their uses.
pub fn inline_index_locals(k: &Kernel) -> Option<String> {
    let text = k.text;
    let body = k.body();
    let written = super::recognize::assigned_in(k, body);
    let constants = file_constants(text);
    let int_named = |n: &str| -> bool {
        constants.iter().any(|(c, _)| c == n)
            || k.param(n).is_some_and(|p| !p.pointer && p.ty.split_whitespace().all(|w| w == "int" || w == "const"))
            || statements(body).iter().any(|s| {
                decl(k, *s).is_some_and(|(ty, id, _)| {
                    k.text_of(id) == n && ty.split_whitespace().all(|w| w == "int" || w == "const")
                })
            })
    };
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for st in statements(body) {
        let Some((ty, id, value)) = decl(k, st) else { continue };
        let v = k.text_of(id);
        if !ty.split_whitespace().all(|w| w == "int" || w == "const") || written.contains(&v) {
            continue;
        }
        // Pure integer arithmetic of names nobody reassigns.
        let parts = descendants(value);
        if parts.iter().any(|d| {
            matches!(
                d.kind(),
                "subscript_expression" | "call_expression" | "assignment_expression" | "update_expression"
            )
        }) {
            continue;
        }
        let ids: Vec<&str> = parts
            .iter()
            .filter(|d| d.kind() == "identifier" && d.parent().is_none_or(|p| p.kind() != "field_expression"))
            .map(|d| k.text_of(*d))
            .collect();
        if ids.iter().any(|i| written.contains(i)) {
            continue;
        }
        let builtins = parts.iter().any(|d| d.kind() == "field_expression");
        let uses: Vec<Node> = descendants(body)
            .into_iter()
            .filter(|d| d.kind() == "identifier" && d.start_byte() > st.end_byte() && k.text_of(*d) == v)
            .collect();
        if uses.is_empty() {
            continue;
        }
        // A loop counter's first value takes the plain index; subscripts take int arithmetic of ints only.
        let loop_init = |u: &Node| {
            u.parent().is_some_and(|p| {
                p.kind() == "init_declarator"
                    && p.child_by_field_name("value") == Some(*u)
                    && p.parent().and_then(|d| d.parent()).is_some_and(|f| f.kind() == "for_statement")
            })
        };
        let all_loop_inits = uses.iter().all(loop_init);
        if plain_index(k, st) && !all_loop_inits {
            continue;
        }
        if !all_loop_inits && (builtins || !ids.iter().all(|i| int_named(i))) {
            continue;
        }
        let expr = compact(k.text, value);
        let mut mine = vec![(st.start_byte()..st.end_byte(), String::new())];
        for u in uses {
            let bare = u.parent().is_some_and(|p| {
                matches!(p.kind(), "subscript_argument_list" | "init_declarator" | "parenthesized_expression")
                    || (p.kind() == "subscript_expression" && p.child_by_field_name("index") == Some(u))
            });
            mine.push((u.byte_range(), if bare { expr.clone() } else { format!("({expr})") }));
        }
        // One local's value naming another inlined one: the later waits for a view of the view.
        let overlaps = |a: &std::ops::Range<usize>, b: &std::ops::Range<usize>| a.start < b.end && b.start < a.end;
        if mine.iter().any(|(a, _)| edits.iter().any(|(b, _)| overlaps(a, b))) {
            continue;
        }
        edits.extend(mine);
    }
    if edits.is_empty() {
        return None;
    }
    Some(edited(text, edits))
}

/// See the module's doc: one guarded block for a guard written twice.
pub fn merged_guards(k: &Kernel) -> Option<String> {
    let body = k.body();
    if k.text_of(body).contains("__syncthreads") {
        return None;
    }
    let sts = statements(body);
    let guards: Vec<Node> = sts.iter().copied().filter(|s| s.kind() == "if_statement").collect();
    let [first, ..] = guards[..] else { return None };
    if guards.len() < 2 || guards.iter().any(|g| g.child_by_field_name("alternative").is_some()) {
        return None;
    }
    let cond = compact(k.text, first.child_by_field_name("condition")?);
    if guards.iter().any(|g| g.child_by_field_name("condition").is_none_or(|c| compact(k.text, c) != cond)) {
        return None;
    }
    // Everything else declares locals without side effects.
    if sts.iter().any(|s| s.kind() != "if_statement" && (s.kind() != "declaration" || has_side_effects(*s))) {
        return None;
    }
    // The declarations the guard reads stay in front; the rest move into the one guarded block.
    let cond_ids: Vec<&str> = descendants(first.child_by_field_name("condition")?)
        .into_iter()
        .filter(|d| d.kind() == "identifier")
        .map(|d| k.text_of(d))
        .collect();
    let mut front = Vec::new();
    let mut inside = Vec::new();
    for s in &sts {
        if s.kind() == "if_statement" {
            let then = s.child_by_field_name("consequence")?;
            let t = k.text_of(then);
            inside.push(if then.kind() == "compound_statement" {
                t.trim().strip_prefix('{')?.strip_suffix('}')?.trim().to_string()
            } else {
                t.to_string()
            });
        } else {
            let declared: Vec<&str> = descendants(*s)
                .into_iter()
                .filter(|d| d.kind() == "init_declarator")
                .filter_map(|d| d.child_by_field_name("declarator"))
                .map(|d| k.text_of(d))
                .collect();
            if declared.iter().any(|d| cond_ids.contains(d)) {
                front.push(k.text_of(*s).to_string());
            } else {
                inside.push(k.text_of(*s).to_string());
            }
        }
    }
    let cond_text = k.text_of(first.child_by_field_name("condition")?);
    let new_body =
        format!("{{\n  {}\n  if {cond_text} {{\n    {}\n  }}\n}}", front.join("\n  "), inside.join("\n    "));
    Some(k.with_body(&new_body))
}

/// See the module's doc: a Kahan-compensated sum read as a plain sum.
pub fn kahan_as_sum(k: &Kernel) -> Option<String> {
    let text = k.text;
    for lp in descendants(k.body()).into_iter().filter(|d| d.kind() == "for_statement") {
        let Some(b) = lp.child_by_field_name("body").filter(|b| b.kind() == "compound_statement") else { continue };
        let [s1, s2, s3, s4] = statements(b)[..] else { continue };
        // T y = X - c;
        let Some((_, y, v1)) = decl(k, s1) else { continue };
        let Some((_, t, v2)) = decl(k, s2) else { continue };
        let strip = |s: String| s.replace(['(', ')'], "");
        let (y, t) = (k.text_of(y), k.text_of(t));
        if v1.kind() != "binary_expression" || v1.child_by_field_name("operator").is_none_or(|o| k.text_of(o) != "-") {
            continue;
        }
        let (Some(x), Some(c)) = (v1.child_by_field_name("left"), v1.child_by_field_name("right")) else { continue };
        let c = compact(k.text, c);
        // T t = s + y;
        let v2 = compact(k.text, v2);
        let Some(s) = v2.strip_suffix(&format!("+{y}")).map(str::to_string) else { continue };
        if !s.chars().all(|ch| ch.is_alphanumeric() || ch == '_') {
            continue;
        }
        // c = (t - s) - y;  s = t;
        let (e3, e4) = (compact(k.text, s3), compact(k.text, s4));
        if strip(e3) != format!("{c}={t}-{s}-{y};") || e4 != format!("{s}={t};") {
            continue;
        }
        let x = k.text_of(x);
        let inner = format!("{{\n    {s} += {x};\n  }}");
        return Some(edited(text, vec![(b.byte_range(), inner)]));
    }
    None
}

/// See the module's doc: the rows of threads that all repeat their row's work, one unit per row.
pub fn redundant_threads(k: &Kernel) -> Option<String> {
    let body = k.body();
    let sts = statements(body);
    let (guard, decls) = sts.split_last()?;
    if guard.kind() != "if_statement" || guard.child_by_field_name("alternative").is_some() {
        return None;
    }
    let inner = guard.child_by_field_name("consequence")?;
    let inner_text = k.text_of(inner);
    // Each thread stores plain values: no atomics, no compound stores, no barrier or shared memory.
    if ["atomic", "__syncthreads", "__shared__", "threadIdx", "blockIdx"].iter().any(|w| inner_text.contains(w)) {
        return None;
    }
    let compound_store = descendants(inner).into_iter().any(|d| {
        (d.kind() == "assignment_expression"
            && d.child_by_field_name("operator").is_some_and(|o| k.text_of(o) != "=")
            && d.child_by_field_name("left").is_some_and(|l| l.kind() != "identifier"))
            || (d.kind() == "update_expression"
                && d.child_by_field_name("argument").is_some_and(|a| a.kind() != "identifier"))
    });
    if compound_store {
        return None;
    }
    // `T tid = <x index>; T row = blockIdx.y;` (any order), nothing else before the guard.
    let mut tid = None;
    let mut row = None;
    for st in decls {
        let (ty, id, value) = decl(k, *st)?;
        let id = k.text_of(id).to_string();
        if k.index_decl(*st, "x").is_some() {
            tid = Some(id);
        } else if compact(k.text, value) == "blockIdx.y" {
            row = Some((ty, id));
        } else {
            return None;
        }
    }
    let (tid, (ty, row)) = (tid?, row?);
    if !crate::syntax::uses(inner, k.text, &tid).is_empty() {
        return None;
    }
    // `tid < N && row < B` (either order): the unit bound is B.
    let cond = guard.child_by_field_name("condition")?.child_by_field_name("value")?;
    if cond.kind() != "binary_expression" || cond.child_by_field_name("operator").is_none_or(|o| k.text_of(o) != "&&") {
        return None;
    }
    let (l, r) =
        (compact(k.text, cond.child_by_field_name("left")?), compact(k.text, cond.child_by_field_name("right")?));
    let bound_of = |c: &str, v: &str| c.strip_prefix(&format!("{v}<")).map(str::to_string);
    let rows = match (bound_of(&l, &tid), bound_of(&r, &row), bound_of(&l, &row), bound_of(&r, &tid)) {
        (Some(_), Some(b), _, _) | (_, _, Some(b), Some(_)) => b,
        _ => return None,
    };
    if !rows.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let ty = ty.replace("const ", "");
    let new_body =
        format!("{{\n  {ty} {row} = blockIdx.x * blockDim.x + threadIdx.x;\n  if ({row} < {rows}) {inner_text}\n}}");
    Some(k.with_body(&new_body))
}

/// The declarations splitting `idx`: (name, type, is the row, divisor) and their statements, from the
/// leading statements of `sts` (before the guard or first inside it: both styles are common).
#[allow(clippy::type_complexity)]
fn split_decls<'t>(
    k: &Kernel,
    idx: &str,
    sts: &[Node<'t>],
) -> Option<(Vec<(String, String, bool, String)>, Vec<Node<'t>>)> {
    let mut parts: Vec<(String, String, bool, String)> = Vec::new();
    let mut split_sts = Vec::new();
    for st in sts.iter().take(2) {
        if st.kind() != "declaration" || parts.len() == 2 {
            break;
        }
        let ty = k.text_of(st.child_by_field_name("type")?).to_string();
        let mut cursor = st.walk();
        let decls: Vec<Node> = st.children_by_field_name("declarator", &mut cursor).collect();
        let mut got = Vec::new();
        for d in decls {
            let (n, v) = (
                d.child_by_field_name("declarator")
                    .filter(|n| d.kind() == "init_declarator" && n.kind() == "identifier"),
                d.child_by_field_name("value"),
            );
            let (Some(n), Some(v)) = (n, v.map(strip_parens)) else { break };
            let op =
                v.child_by_field_name("operator").filter(|_| v.kind() == "binary_expression").map(|o| k.text_of(o));
            let left = v.child_by_field_name("left").map(|l| bare(k.text_of(l)));
            match (op, left) {
                (Some(op @ ("/" | "%")), Some(l)) if l == idx => got.push((
                    k.text_of(n).to_string(),
                    ty.clone(),
                    op == "/",
                    compact(k.text, v.child_by_field_name("right")?),
                )),
                _ => break,
            }
        }
        if got.is_empty() {
            break;
        }
        if got.len() != st.named_children(&mut st.walk()).filter(|c| c.kind() == "init_declarator").count() {
            return None;
        }
        parts.extend(got);
        split_sts.push(*st);
    }
    Some((parts, split_sts))
}

/// The file with the kernel's flat index split by `/` and `%` read as two
/// indices: `T idx = <global x>; if (idx >= M * N) return; T i = idx / N, j = idx % N;`
/// (or the body under `if (idx < M * N) { ... }`) becomes `T j = <global x>;
/// T i = <global y>; if (i >= M || j >= N) return;` and every other use of
/// `idx` becomes `(i * (N) + j)`; the split declarations may also stand
/// between `idx` and the guard. The units are the same (`i = u / N`,
/// `j = u % N` after a rewrite, as the original had them), but recipes that
/// need a row and a column (tiles) now see them. Only a rewrite's view: every
/// structural rewrite replaces the whole body, launch-agnostic.
pub fn split_flat(k: &Kernel) -> Option<String> {
    let text = k.text;
    let sts = statements(k.body());
    let [(idx, _, 'x')] = &index_decls(k, *sts.first()?)?[..] else { return None };
    let (early_parts, early_sts) = split_decls(k, idx, &sts[1..])?;
    let at = 1 + early_sts.len();
    let guard = *sts.get(at)?;
    let (cond, then) = (
        guard.child_by_field_name("condition")?.child_by_field_name("value")?,
        guard.child_by_field_name("consequence")?,
    );
    if guard.kind() != "if_statement" || guard.child_by_field_name("alternative").is_some() {
        return None;
    }
    let returns = single_statement(then).is_some_and(|s| s.kind() == "return_statement" && s.named_child_count() == 0);
    let (out_op, rest): (&str, Vec<Node>) = if returns {
        (">=", sts[at + 1..].to_vec())
    } else if sts.len() == at + 1 && then.kind() == "compound_statement" {
        ("<", statements(then))
    } else {
        return None;
    };
    let c = strip_parens(cond);
    if c.kind() != "binary_expression"
        || c.child_by_field_name("operator").map(|o| k.text_of(o)) != Some(out_op)
        || bare(k.text_of(c.child_by_field_name("left")?)) != *idx
    {
        return None;
    }
    let bound = strip_parens(c.child_by_field_name("right")?);
    if bound.kind() != "binary_expression" || bound.child_by_field_name("operator").map(|o| k.text_of(o)) != Some("*") {
        return None;
    }
    let (bl, br) =
        (compact(k.text, bound.child_by_field_name("left")?), compact(k.text, bound.child_by_field_name("right")?));
    let (parts, split_sts) =
        if early_parts.is_empty() { split_decls(k, idx, &rest)? } else { (early_parts, early_sts) };
    let [a, b] = &parts[..] else { return None };
    let (row, col) = if a.2 && !b.2 {
        (a, b)
    } else if b.2 && !a.2 {
        (b, a)
    } else {
        return None;
    };
    let divisor = row.3.trim_matches(|c| c == '(' || c == ')').to_string();
    if row.3 != col.3 || !divisor.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let rows = if br == divisor {
        bl
    } else if bl == divisor {
        br
    } else {
        return None;
    };
    // idx is never assigned; its other uses become the recombined index.
    let body = k.body();
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for d in descendants(body) {
        if matches!(d.kind(), "assignment_expression" | "update_expression")
            && d.child_by_field_name("left").or(d.child_by_field_name("argument")).is_some_and(|t| k.text_of(t) == idx)
        {
            return None;
        }
    }
    let (r, c_) = (&row.0, &col.0);
    let first = sts[0];
    edits.push((
        first.byte_range(),
        format!(
            "{} {c_} = blockIdx.x * blockDim.x + threadIdx.x;\n  {} {r} = blockIdx.y * blockDim.y + threadIdx.y;",
            col.1, row.1
        ),
    ));
    // `(R) && c` would read as a cast of `&&c`: parentheses only around an expression.
    let rows = if rows.chars().all(|ch| ch.is_alphanumeric() || ch == '_') { rows } else { format!("({rows})") };
    let new_cond = if returns {
        format!("{r} >= {rows} || {c_} >= {divisor}")
    } else {
        format!("{r} < {rows} && {c_} < {divisor}")
    };
    edits.push((cond.byte_range(), new_cond));
    for st in &split_sts {
        edits.push((st.byte_range(), String::new()));
    }
    for d in descendants(body) {
        let inside = |n: Node| {
            n.start_byte() >= first.end_byte()
                && !split_sts.iter().any(|s| s.byte_range().contains(&n.start_byte()))
                && !cond.byte_range().contains(&n.start_byte())
        };
        if d.kind() == "identifier" && k.text_of(d) == idx && inside(d) {
            edits.push((d.byte_range(), format!("({r} * ({divisor}) + {c_})")));
        }
    }
    Some(edited(text, edits))
}

/// The file with the `#pragma unroll` lines in the kernel's body removed (`#pragma
/// unroll` before the dot-product loop hid it from the contraction's shape);
/// `None` when it has none. Only a rewrite's view: structural rewrites
/// replace the whole body and set their own unrolling.
pub fn without_pragmas(k: &Kernel) -> Option<String> {
    let text = k.text;
    let ranges: Vec<std::ops::Range<usize>> = descendants(k.body())
        .into_iter()
        .filter(|d| {
            d.kind() == "preproc_call"
                && d.child_by_field_name("directive").is_some_and(|x| k.text_of(x).trim() == "#pragma")
                && d.child_by_field_name("argument").is_some_and(|x| k.text_of(x).trim().starts_with("unroll"))
        })
        .map(|d| d.byte_range())
        .collect();
    if ranges.is_empty() {
        return None;
    }
    Some(edited(text, ranges.into_iter().map(|r| (r, "\n".to_string()))))
}

/// Expansion rounds for macros that use macros.
const MACRO_DEPTH: usize = 4;

/// The file with the function-like macro calls in the kernel's body
/// expanded as the preprocessor would (`EL(lhs, r, k)` with `#define EL(m, r, c)
/// m[(r) * dim + (c)]` becomes `lhs[((r)) * dim + ((k))]`), so recipes that
/// look for subscripts see them; object-like macros of the thread index
/// (`#define IDX (blockIdx.x * blockDim.x + threadIdx.x)`) too; `None` when
/// the body uses no such macro. Single-line `#define`s only, none that
/// stringize or paste.
pub fn expand_macros(kernel: &Kernel) -> Option<String> {
    let text = kernel.text;
    let mut macros: Vec<(String, Vec<String>, String)> = Vec::new();
    let mut objects: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let Some(rest) =
            line.trim_start().strip_prefix('#').map(str::trim_start).and_then(|l| l.strip_prefix("define"))
        else {
            continue;
        };
        let rest = rest.trim_start();
        let word: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        // An object-like macro of the thread index (`#define IDX (blockIdx.x * blockDim.x + threadIdx.x)`);
        // other object-like macros (sizes) stay as written.
        let object_body = rest[word.len()..].trim();
        if !word.is_empty()
            && !rest[word.len()..].starts_with('(')
            && !object_body.contains('#')
            && !object_body.ends_with('\\')
            && ["threadIdx", "blockIdx", "blockDim", "gridDim"].iter().any(|b| object_body.contains(b))
        {
            objects.push((word, object_body.to_string()));
            continue;
        }
        let Some(open) = rest.find('(') else { continue };
        let mname = &rest[..open];
        if mname.is_empty() || !mname.chars().all(|c| c.is_alphanumeric() || c == '_') {
            continue; // an object-like macro (`#define N (4)`) has a space before its parenthesis
        }
        let Some(close) = rest[open..].find(')') else { continue };
        let params: Vec<String> =
            rest[open + 1..open + close].split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect();
        let body = rest[open + close + 1..].trim();
        if body.is_empty() || body.contains('#') || body.ends_with('\\') || params.iter().any(|p| p == "...") {
            continue;
        }
        macros.push((mname.to_string(), params, body.to_string()));
    }
    if macros.is_empty() && objects.is_empty() {
        return None;
    }
    let mut out = text.to_string();
    let mut changed = false;
    for _ in 0..MACRO_DEPTH {
        let k = kernel.reread(&out)?;
        let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for call in descendants(k.body()).into_iter().filter(|n| n.kind() == "call_expression") {
            let Some(f) = call.child_by_field_name("function").filter(|f| f.kind() == "identifier") else { continue };
            let Some((_, params, body)) = macros.iter().find(|m| m.0 == k.text_of(f)) else { continue };
            // Outermost calls first; the ones inside are expanded in the next round.
            if edits.iter().any(|(r, _)| r.contains(&call.start_byte())) {
                continue;
            }
            let args: Vec<&str> =
                statements(call.child_by_field_name("arguments")?).into_iter().map(|a| k.text_of(a)).collect();
            if args.len() != params.len() {
                continue;
            }
            let mut expanded = String::new();
            let mut word = String::new();
            let flush = |word: &mut String, expanded: &mut String| {
                match params.iter().position(|p| p == word) {
                    Some(i) => expanded.push_str(&format!("({})", args[i])),
                    None => expanded.push_str(word),
                }
                word.clear();
            };
            for ch in body.chars() {
                if ch.is_alphanumeric() || ch == '_' {
                    word.push(ch);
                } else {
                    flush(&mut word, &mut expanded);
                    expanded.push(ch);
                }
            }
            flush(&mut word, &mut expanded);
            // A subscript stays one (it may be stored to); anything else keeps its grouping.
            let subscript = {
                let head: String = expanded.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                !head.is_empty()
                    && expanded[head.len()..].starts_with('[')
                    && expanded.ends_with(']')
                    && expanded[head.len()..].matches('[').count() == 1
            };
            edits.push((call.byte_range(), if subscript { expanded } else { format!("({expanded})") }));
        }
        // Object-like index macros outside those calls (inside, the next round sees them).
        for id in descendants(k.body()).into_iter().filter(|n| n.kind() == "identifier") {
            if let Some((_, body)) = objects.iter().find(|o| o.0 == k.text_of(id))
                && !edits.iter().any(|(r, _)| r.contains(&id.start_byte()))
            {
                edits.push((id.byte_range(), format!("({body})")));
            }
        }
        if edits.is_empty() {
            break;
        }
        changed = true;
        out = edited(&out, edits);
    }
    changed.then_some(out)
}
