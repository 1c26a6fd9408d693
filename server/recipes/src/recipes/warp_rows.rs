//! Warp-cooperative rows: a kernel where each thread owns row
//! `r = blockIdx.x * blockDim.x + threadIdx.x` and walks its columns with
//! `for (c = 0; c < COLS; ++c)` loops (strided by a row per lane, so each warp
//! access touches 32 rows). Each warp now takes its 32 rows one after another,
//! its lanes taking columns `lane, lane + 32, ...`; scalar accumulators are
//! combined across lanes with `__shfl_xor_sync` after their loop.
//!
//! Accepted shape, all at the body's top level: the row declaration; at most
//! one `if (G) return;` right after it (or `if (G) { ... }` around the rest); single scalar declarations without
//! subscripts; column loops from 0 to the same scalar bound with one statement:
//! `A = F(A, E)` (F a max/min), `A += E`, or `P[r * COLS + c] = E`. Every
//! subscript in a loop must be `P[r * COLS + c]`: a lane only touches its own
//! elements of its own row, so per-element order is kept and nothing crosses rows.

use crate::kernel::Kernel;
use crate::syntax::{compact, descendants, edited, indent_at, single_statement, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct WarpRows;

const SCALARS: &[&str] = &["float", "double", "int", "unsigned", "unsigned int", "long long", "unsigned long long"];
const EXTREMA: &[&str] = &["fmaxf", "fmax", "max", "fminf", "fmin", "min"];

enum Update {
    /// `A = F(A, E)`: (A, F).
    Extremum(String, String),
    /// `A += E`.
    Sum(String),
    Store,
}

/// `for (T c = 0; c < BOUND; ++c) STATEMENT` → (c, BOUND, statement).
fn column_loop<'t>(k: &'t Kernel, f: Node<'t>) -> Option<(String, String, Node<'t>)> {
    let t = k.text;
    let init =
        f.child_by_field_name("initializer").filter(|d| f.kind() == "for_statement" && d.kind() == "declaration")?;
    let decl = init.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let c = k.text_of(decl.child_by_field_name("declarator")?).to_string();
    let (_, bound) = compact(t, f.child_by_field_name("condition")?)
        .split_once('<')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .filter(|(a, _)| *a == c)?;
    let step = compact(t, f.child_by_field_name("update")?);
    let bound_ok = bound.chars().all(|ch| ch.is_ascii_digit()) || k.param(&bound).is_some_and(|p| !p.pointer);
    let ok = compact(t, decl.child_by_field_name("value")?) == "0"
        && [format!("++{c}"), format!("{c}++"), format!("{c}+=1")].contains(&step)
        && bound_ok
        && !bound.starts_with('=');
    let inner = single_statement(f.child_by_field_name("body")?)?;
    ok.then_some((c, bound, inner))
}

/// Whether `e` touches memory only at `P[r * cols + c]` and names only
/// `locals`, scalar parameters, pointer parameters as such a subscript's
/// array, and built-in functions (called, not defined in the file).
fn own_elements(k: &Kernel, e: Node, locals: &[&str], row: &str, col: &str, cols: &str) -> bool {
    let own = [
        format!("{row}*{cols}+{col}"),
        format!("{col}+{row}*{cols}"),
        format!("{cols}*{row}+{col}"),
        format!("{col}+{cols}*{row}"),
    ];
    descendants(e).into_iter().all(|n| match n.kind() {
        "assignment_expression" | "update_expression" | "comma_expression" => false,
        "subscript_expression" => {
            let pointer =
                n.child_by_field_name("argument").is_some_and(|a| k.param(k.text_of(a)).is_some_and(|p| p.pointer));
            let index = n.child_by_field_name("indices").and_then(|i| i.named_child(0)).map(|i| compact(k.text, i));
            pointer && index.is_some_and(|i| own.contains(&i))
        }
        "identifier" => {
            let name = k.text_of(n);
            let called = n
                .parent()
                .is_some_and(|p| p.kind() == "call_expression" && p.child_by_field_name("function") == Some(n));
            let subscripted = n
                .parent()
                .is_some_and(|p| p.kind() == "subscript_expression" && p.child_by_field_name("argument") == Some(n));
            (called && !k.file_defines(name))
                || locals.contains(&name)
                || k.param(name).is_some_and(|p| !p.pointer || subscripted)
        }
        _ => true,
    })
}

/// The loop's single statement as an update, checked against the row's rules.
fn update(k: &Kernel, st: Node, scalars: &[String], row: &str, col: &str, cols: &str) -> Option<Update> {
    let a = st.named_child(0).filter(|e| st.kind() == "expression_statement" && e.kind() == "assignment_expression")?;
    let (left, op, right) = (
        a.child_by_field_name("left")?,
        k.text_of(a.child_by_field_name("operator")?),
        a.child_by_field_name("right")?,
    );
    let target = k.text_of(left);
    let others: Vec<&str> = scalars.iter().map(String::as_str).filter(|s| *s != target).chain([row, col]).collect();
    let pure = |e: Node| own_elements(k, e, &others, row, col, cols);
    if left.kind() == "subscript_expression" {
        let ok = op == "="
            && k.param(k.text_of(left.child_by_field_name("argument")?)).is_some_and(|p| p.pointer && !p.is_const)
            && pure(left)
            && pure(right);
        return ok.then_some(Update::Store);
    }
    if !scalars.iter().any(|s| s == target) {
        return None;
    }
    match op {
        "+=" if pure(right) => Some(Update::Sum(target.to_string())),
        "=" if right.kind() == "call_expression" => {
            let f = k.text_of(right.child_by_field_name("function")?);
            let [acc, e] = statements(right.child_by_field_name("arguments")?)[..] else { return None };
            (EXTREMA.contains(&f) && k.text_of(acc) == target && pure(e))
                .then(|| Update::Extremum(target.to_string(), f.to_string()))
        }
        _ => None,
    }
}

/// A statement's text with `edits` (ranges relative to the file) applied, re-indented by two spaces.
fn moved(k: &Kernel, st: Node, edits: &[(std::ops::Range<usize>, String)]) -> String {
    let at = st.start_byte();
    let out = edited(k.text_of(st), edits.iter().map(|(r, with)| (r.start - at..r.end - at, with.clone())));
    out.replace('\n', "\n  ")
}

fn rewrite(k: &Kernel) -> Option<Rewrite> {
    if !k.whole_warp_1d_blocks() {
        return None;
    }
    let body = k.body();
    let sts = statements(body);
    let (decl, rest) = sts.split_first()?;
    let row = k.index_decl(*decl, "x")?;
    let ind = indent_at(k.text, decl.start_byte());
    let outer = indent_at(k.text, body.start_byte());
    let row_value = decl.child_by_field_name("declarator")?.child_by_field_name("value")?;
    let mut out = vec![moved(
        k,
        *decl,
        &[(row_value.byte_range(), "blockIdx.x * blockDim.x + (threadIdx.x & ~31u) + kp_k".to_string())],
    )];
    let mut rest = rest.to_vec();
    // The row guard, `if (G) return;` or `if (G) { ... }` around everything else, becomes a `continue` of this row.
    if let Some(guard) =
        rest.first().copied().filter(|g| g.kind() == "if_statement" && g.child_by_field_name("alternative").is_none())
    {
        let cond = guard.child_by_field_name("condition")?;
        let uniform = own_elements(k, cond, &[row.as_str()], &row, "", "")
            && !descendants(cond).iter().any(|n| n.kind() == "subscript_expression");
        let then = guard.child_by_field_name("consequence")?;
        let ret = single_statement(then).filter(|s| s.kind() == "return_statement" && s.named_child_count() == 0);
        if let Some(ret) = ret.filter(|_| uniform) {
            out.push(moved(k, guard, &[(ret.byte_range(), "continue;".to_string())]));
            rest.remove(0);
        } else if uniform && rest.len() == 1 && then.kind() == "compound_statement" {
            out.push(format!("if (!{}) continue;", k.text_of(cond)));
            rest = statements(then);
        }
    }
    let mut scalars: Vec<String> = Vec::new();
    let (mut cols, mut stores) = (None::<String>, 0);
    for st in &rest {
        if st.kind() == "declaration" {
            let d = st.child_by_field_name("declarator").filter(|d| {
                d.kind() == "init_declarator"
                    && st.named_children(&mut st.walk()).filter(|n| n.kind() == "init_declarator").count() == 1
            })?;
            let name = d.child_by_field_name("declarator").filter(|n| n.kind() == "identifier")?;
            let value = d.child_by_field_name("value")?;
            let locals: Vec<&str> = scalars.iter().map(String::as_str).chain([row.as_str()]).collect();
            let typed = SCALARS.contains(&k.text_of(st.child_by_field_name("type")?));
            if !typed
                || descendants(value).iter().any(|n| n.kind() == "subscript_expression")
                || !own_elements(k, value, &locals, &row, "", "")
            {
                return None;
            }
            scalars.push(k.text_of(name).to_string());
            out.push(moved(k, *st, &[]));
            continue;
        }
        let (c, bound, inner) = column_loop(k, *st)?;
        if cols.get_or_insert_with(|| bound.clone()) != &bound || scalars.contains(&c) || c == row {
            return None;
        }
        let init =
            st.child_by_field_name("initializer")?.child_by_field_name("declarator")?.child_by_field_name("value")?;
        let step = st.child_by_field_name("update")?;
        let edits = [(init.byte_range(), "kp_lane".to_string()), (step.byte_range(), format!("{c} += 32"))];
        let lanes = "for (int kp_o = 16; kp_o > 0; kp_o >>= 1)";
        match update(k, inner, &scalars, &row, &c, &bound)? {
            Update::Store => {
                stores += 1;
                out.push(moved(k, *st, &edits));
            }
            Update::Sum(a) => {
                out.push(format!("if (kp_lane != 0) {a} = 0;"));
                out.push(moved(k, *st, &edits));
                out.push(format!("{lanes} {a} += __shfl_xor_sync(0xffffffffu, {a}, kp_o);"));
            }
            Update::Extremum(a, f) => {
                out.push(moved(k, *st, &edits));
                out.push(format!("{lanes} {a} = {f}({a}, __shfl_xor_sync(0xffffffffu, {a}, kp_o));"));
            }
        }
    }
    if stores == 0 {
        return None;
    }
    let inner: String = out.iter().map(|s| format!("{ind}  {s}\n")).collect();
    let b = format!(
        "{{\n{ind}const int kp_lane = threadIdx.x & 31;\n{ind}for (int kp_k = 0; kp_k < 32; ++kp_k) {{\n{inner}{ind}}}\n{outer}}}"
    );
    let source = k.with_body(&b);
    Some(Rewrite {
        source,
        note: format!("one warp per row ({row}): lanes stride the columns, accumulators combined by __shfl_xor_sync"),
    })
}

impl Recipe for WarpRows {
    fn name(&self) -> &'static str {
        "WarpRows"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::Uncoalesced, Code::MemoryCoalescing]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        Kernel::find(text, kernel).and_then(|k| rewrite(&k)).into_iter().collect()
    }
}
