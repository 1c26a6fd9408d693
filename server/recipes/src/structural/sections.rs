//! A block-partitioned walk read as a grid-stride loop, so the units
//! recogniser sees one unit per element:
//!
//! ```text
//! T tid = blockIdx.x * blockDim.x + threadIdx.x;      T total = blockDim.x * gridDim.x;
//! T total = blockDim.x * gridDim.x;            ==>    for (T i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += total) {
//! T section = (n + total - 1) / total;                  BODY
//! T start = tid * section;                            }
//! for (T k = 0; k < section; ++k) {
//!   T i = start + k;
//!   if (i < n) { BODY }
//! }
//! ```
//!
//! Both visit every `i` below `n` exactly once; only which thread takes which
//! `i`, and in what order, differs, which a unit body that carries nothing
//! from one element to the next (checked) cannot tell. Only a rewrite's view:
//! every structural rewrite replaces the whole body and re-maps the units.

use crate::kernel::Kernel;
use crate::syntax::{descendants, statements};
use tree_sitter::Node;

fn compact(k: &Kernel, n: Node) -> String {
    k.text_of(n).chars().filter(|c| !c.is_whitespace()).collect()
}

/// `T NAME = VALUE;` with one declarator: (type, name, compact value).
fn decl(k: &Kernel, st: Node) -> Option<(String, String, String)> {
    if st.kind() != "declaration"
        || st.named_children(&mut st.walk()).filter(|c| c.kind() == "init_declarator").count() != 1
    {
        return None;
    }
    let d = st.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let name = d.child_by_field_name("declarator").filter(|n| n.kind() == "identifier")?;
    let ty = k.text_of(st.child_by_field_name("type")?).to_string();
    Some((ty, k.text_of(name).to_string(), compact(k, d.child_by_field_name("value")?)))
}

fn strip(s: &str) -> String {
    s.replace(['(', ')'], "")
}

/// The view of kernel `name`, or `None` when its body is not exactly such a walk.
pub(crate) fn grid_stride(text: &str, name: &str) -> Option<String> {
    let k = Kernel::find(text, name)?;
    let sts = statements(k.body());
    let [s_tid, s_total, s_section, s_start, lp] = sts[..] else { return None };
    let (ty, tid, v) = decl(&k, s_tid)?;
    if !["blockIdx.x*blockDim.x+threadIdx.x", "threadIdx.x+blockIdx.x*blockDim.x", "blockDim.x*blockIdx.x+threadIdx.x"]
        .contains(&strip(&v).as_str())
    {
        return None;
    }
    let (_, total, v) = decl(&k, s_total)?;
    if !["blockDim.x*gridDim.x", "gridDim.x*blockDim.x"].contains(&strip(&v).as_str()) {
        return None;
    }
    let (_, section, v) = decl(&k, s_section)?;
    // (n + total - 1) / total
    let v = strip(&v);
    let n = v.strip_suffix(&format!("+{total}-1/{total}"))?.to_string();
    if n.is_empty() || !n.chars().all(|c| c.is_alphanumeric() || c == '_') || k.param(&n).is_none_or(|p| p.pointer) {
        return None;
    }
    let (_, start, v) = decl(&k, s_start)?;
    if strip(&v) != format!("{tid}*{section}") && strip(&v) != format!("{section}*{tid}") {
        return None;
    }
    // for (T j = 0; j < section; ++j) { T i = start + j; if (i < n) { BODY } }
    if lp.kind() != "for_statement" {
        return None;
    }
    let init = lp.child_by_field_name("initializer").filter(|i| i.kind() == "declaration")?;
    let (_, j, v) = decl(&k, init)?;
    let update = compact(&k, lp.child_by_field_name("update")?);
    if v != "0"
        || compact(&k, lp.child_by_field_name("condition")?) != format!("{j}<{section}")
        || (update != format!("++{j}") && update != format!("{j}++"))
    {
        return None;
    }
    let body = lp.child_by_field_name("body").filter(|b| b.kind() == "compound_statement")?;
    let [s_i, guard] = statements(body)[..] else { return None };
    let (_, i, v) = decl(&k, s_i)?;
    if strip(&v) != format!("{start}+{j}") && strip(&v) != format!("{j}+{start}") {
        return None;
    }
    if guard.kind() != "if_statement" || guard.child_by_field_name("alternative").is_some() {
        return None;
    }
    let cond = guard.child_by_field_name("condition")?;
    if strip(&compact(&k, cond)) != format!("{i}<{n}") {
        return None;
    }
    let then = guard.child_by_field_name("consequence")?;
    let inner = k.text_of(then);
    // Nothing carried from one element to the next: no local of the kernel is assigned in the body,
    // and no loop control leaves it.
    let names = [tid.as_str(), total.as_str(), section.as_str(), start.as_str(), j.as_str(), i.as_str()];
    for d in descendants(then) {
        let target = match d.kind() {
            "assignment_expression" => d.child_by_field_name("left"),
            "update_expression" => d.child_by_field_name("argument"),
            "break_statement" | "continue_statement" | "return_statement" | "goto_statement" => return None,
            _ => None,
        };
        if let Some(t) = target.filter(|t| t.kind() == "identifier") {
            let declared_inside = descendants(then).iter().any(|n| {
                n.kind() == "init_declarator"
                    && n.child_by_field_name("declarator").is_some_and(|x| k.text_of(x) == k.text_of(t))
            });
            if names.contains(&k.text_of(t)) || !declared_inside {
                return None;
            }
        }
        if d.kind() == "identifier"
            && [tid.as_str(), section.as_str(), start.as_str(), j.as_str()].contains(&k.text_of(d))
        {
            return None;
        }
    }
    let ty = ty.replace("const ", "").trim().to_string();
    let body = format!(
        "{{\n  {}\n  for ({ty} {i} = blockIdx.x * blockDim.x + threadIdx.x; {i} < {n}; {i} += {total}) {inner}\n}}",
        k.text_of(s_total)
    );
    Some(k.with_body(&body))
}
