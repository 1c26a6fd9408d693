//! [`HoistRowWork`]: a thread per element of a 2D grid of units whose first statements depend on
//! the row alone (each of a row's threads recomputes the row's max and sum, often in `__device__`
//! helpers) is first rewritten as a thread per row: the row's statements once, the helpers they
//! call inlined (parameters bound to the arguments, locals renamed), then a loop over the row's
//! elements holding the element's own statements. That form is a row reduction followed by a map,
//! which [`WarpUnits`](super::WarpUnits) and [`BlockUnits`](super::BlockUnits) turn into the
//! expert form (a warp or block per row, shuffle all-reductions); their rewrites are this
//! recipe's. The thread-per-row form itself is never offered: it only names the structure.

use crate::kernel::Kernel;
use crate::syntax::{descendants, has_side_effects, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::units::recognize::{edited, units};
use tree_sitter::Node;

pub struct HoistRowWork;

/// `T v = f(args);` with `f` a `__device__` helper of the file whose body ends in its only
/// `return E;`: the helper's statements with its parameters bound to the arguments and its names
/// prefixed by `kp_<v>_`, then `T v = E;`. `None` where the statement is not such a call.
fn inline_call(k: &Kernel, st: Node) -> Option<String> {
    if st.kind() != "declaration" {
        return None;
    }
    let init = st.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let var = k.text_of(init.child_by_field_name("declarator").filter(|d| d.kind() == "identifier")?);
    let call = init.child_by_field_name("value").filter(|v| v.kind() == "call_expression")?;
    let f = k.device_function(k.text_of(call.child_by_field_name("function")?))?;
    let args: Vec<Node> = {
        let a = call.child_by_field_name("arguments")?;
        let mut c = a.walk();
        a.named_children(&mut c).collect()
    };
    let fdecl = f.child_by_field_name("declarator")?;
    let params: Vec<Node> = {
        let p = fdecl.child_by_field_name("parameters")?;
        let mut c = p.walk();
        p.named_children(&mut c).filter(|n| n.kind() == "parameter_declaration").collect()
    };
    let body = f.child_by_field_name("body")?;
    let sts = statements(body);
    let (last, rest) = sts.split_last()?;
    let returns = descendants(body).iter().filter(|d| d.kind() == "return_statement").count();
    if params.len() != args.len()
        || last.kind() != "return_statement"
        || returns != 1
        || args.iter().any(|a| has_side_effects(*a))
    {
        return None;
    }
    // The helper's own names (parameters and locals) and their new spellings.
    let param_name = |p: Node| {
        descendants(p.child_by_field_name("declarator")?)
            .into_iter()
            .find(|n| n.kind() == "identifier")
            .map(|n| k.text_of(n).to_string())
    };
    let mut names: Vec<String> = params.iter().map(|p| param_name(*p)).collect::<Option<_>>()?;
    for d in descendants(body) {
        if d.kind() == "declaration" || d.kind() == "for_statement" {
            for n in descendants(d) {
                if matches!(n.kind(), "init_declarator" | "declaration")
                    && let Some(id) = n.child_by_field_name("declarator").filter(|i| i.kind() == "identifier")
                {
                    names.push(k.text_of(id).to_string());
                }
            }
        }
    }
    let renamed = |n: Node| {
        let edits: Vec<_> = descendants(n)
            .into_iter()
            .filter(|d| d.kind() == "identifier" && names.iter().any(|x| x == k.text_of(*d)))
            .map(|d| (d.byte_range(), format!("kp_{var}_{}", k.text_of(d))))
            .collect();
        edited(k, n, &edits)
    };
    let mut out = Vec::new();
    for (p, a) in params.iter().zip(&args) {
        // `const float* X` binds as `const float* kp_v_X = (arg);`: the declaration with the name renamed.
        out.push(format!("{} = ({});", renamed(*p), k.text_of(*a)));
    }
    out.extend(rest.iter().map(|s| renamed(*s)));
    let value = renamed(last.named_child(0)?);
    out.push(format!("{} {var} = {value};", k.text_of(st.child_by_field_name("type")?)));
    Some(out.join("\n  "))
}

/// Whether `st` stores nothing outside its locals: every assignment and increment is to a plain
/// name, and it calls no atomics, barriers or `printf`.
pub(super) fn writes_locals_only(k: &Kernel, st: Node) -> bool {
    descendants(st).iter().all(|d| match d.kind() {
        "assignment_expression" => d.child_by_field_name("left").is_some_and(|l| l.kind() == "identifier"),
        "update_expression" => d.child_by_field_name("argument").is_some_and(|l| l.kind() == "identifier"),
        "call_expression" => d.child_by_field_name("function").is_some_and(|f| {
            let f = k.text_of(f);
            !f.starts_with("atomic") && !f.starts_with("__sync") && f != "printf"
        }),
        _ => true,
    })
}

/// The thread-per-row form of the kernel, where its first statements depend on the row alone.
fn per_row(k: &Kernel) -> Option<String> {
    let u = units(k)?;
    let [row, col] = &u.indices[..] else { return None };
    if !u.fixed.is_empty() {
        return None;
    }
    let nodes = u.only_nodes()?;
    let names_col = |n: &Node| descendants(*n).iter().any(|d| d.kind() == "identifier" && k.text_of(*d) == col.name);
    let split = nodes.iter().position(names_col)?;
    let (row_part, element_part) = nodes.split_at(split);
    // The row's statements are declarations (no stores) that do a row's work: a loop or a helper call.
    let row_work = row_part.iter().any(|s| {
        descendants(*s).iter().any(|d| matches!(d.kind(), "for_statement" | "while_statement" | "call_expression"))
    });
    let row_ok = row_part.iter().all(|s| writes_locals_only(k, *s));
    let element_ok = element_part.iter().all(|s| !descendants(*s).iter().any(|d| d.kind() == "return_statement"));
    let shares_row = super::flat_rows::writes_row_names(k, row_part, element_part);
    if row_part.is_empty() || !row_work || !row_ok || !element_ok || shares_row {
        return None;
    }
    let mut body = String::from("{\n");
    for h in &u.head {
        body += &format!("  {}\n", k.text_of(*h));
    }
    body += &format!("  {} {} = blockIdx.x * blockDim.x + threadIdx.x;\n", row.ty, row.name);
    body += &format!("  if ({} >= {}) return;\n", row.name, row.bound);
    for s in row_part {
        let text = inline_call(k, *s).unwrap_or_else(|| k.text_of(*s).to_string());
        body += &format!("  {text}\n");
    }
    body += &format!("  for ({} {c} = 0; {c} < {}; {c}++) {{\n", col.ty, col.bound, c = col.name);
    for s in element_part {
        body += &format!("    {}\n", k.text_of(*s));
    }
    body += "  }\n}";
    Some(k.with_body(&body))
}

fn rewrites(k: &Kernel) -> Vec<Rewrite> {
    let kernel = k.func.name.as_str();
    let (what, teams): (String, Vec<Rewrite>) = if let Some(rows) = per_row(k) {
        let teams: [&dyn Recipe; 2] = [&super::WarpUnits, &super::BlockUnits];
        (
            "the row's work once per row (helpers inlined)".into(),
            teams.iter().flat_map(|r| r.rewrite(&rows, kernel)).collect(),
        )
    } else if let Some((rows, row)) = super::flat_rows::per_row_flat(k) {
        // The rows are known from the facts read there (the model does not classify a flattened nest).
        let mut out = super::WarpUnits.rewrite(&rows, kernel);
        out.extend(super::warp_units::block_units_of_rows(&rows, kernel));
        (
            format!(
                "the flat index read as rows of {row} elements, each row's work once per row (its loop nests as one loop)"
            ),
            out,
        )
    } else {
        return Vec::new();
    };
    teams.into_iter().map(|rw| Rewrite { source: rw.source, note: format!("{what}, then {}", rw.note) }).collect()
}

impl Recipe for HoistRowWork {
    fn name(&self) -> &'static str {
        "HoistRowWork"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::RowReduction]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::RowWalk, Code::MissedReuse, Code::UncoalescedAccess]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        super::with_units_view(text, kernel, rewrites)
    }
}
