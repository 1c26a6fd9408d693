//! The thread-per-row form of a thread per element of a flat index whose first statements do a
//! row's work (instance norm: `c = (idx % (C * H * W)) / (H * W)`, then every thread sums its
//! whole `H x W` plane twice). The rows are read from facts, not from the spelling: the row length
//! `P` is the trip count of the first loop nest of the row's work (its bounds known constants), the
//! unit count is a multiple of `P`, and every name the row's work reads is the same for all `P`
//! elements of each row (evaluated over whole rows: the first, the second and the last). The form
//! is then a thread per row: the row's statements once (loop nests of constant bounds flattened
//! into one loop, so that a warp or block splits it with neighbouring lanes on neighbouring
//! elements), then a loop over the row's elements that re-binds the unit index and its derived
//! names and runs the element's statements. [`HoistRowWork`](super::HoistRowWork) hands it to
//! [`WarpUnits`](super::WarpUnits) and [`BlockUnits`](super::BlockUnits).

use crate::kernel::Kernel;
use crate::syntax::{descendants, statements};
use kernelpro_source::units::recognize::units;
use std::collections::HashMap;
use tree_sitter::Node;

/// The most elements of a row checked one by one; longer rows are sampled.
const EXHAUSTIVE: i64 = 1 << 16;

/// An integer expression's value with the names bound in `env` (`None` where it is not a plain
/// integer expression of those names and literals, or divides by zero).
fn eval(text: &str, n: Node, env: &HashMap<String, i64>) -> Option<i64> {
    let src = |n: Node| &text[n.byte_range()];
    let eval = |n: Node, env: &HashMap<String, i64>| eval(text, n, env);
    match n.kind() {
        "number_literal" => {
            let t = src(n).trim_end_matches(['u', 'U', 'l', 'L']);
            t.parse().ok()
        }
        "identifier" => env.get(src(n)).copied(),
        "parenthesized_expression" => eval(n.named_child(0)?, env),
        "cast_expression" => {
            let ty = src(n.child_by_field_name("type")?);
            let integral = ["int", "long", "size_t", "unsigned", "int64_t", "uint32_t", "short"];
            if !integral.iter().any(|t| ty.contains(t)) {
                return None;
            }
            eval(n.child_by_field_name("value")?, env)
        }
        "unary_expression" if src(n.child_by_field_name("operator")?) == "-" => {
            Some(-eval(n.child_by_field_name("argument")?, env)?)
        }
        "binary_expression" => {
            let a = eval(n.child_by_field_name("left")?, env)?;
            let b = eval(n.child_by_field_name("right")?, env)?;
            match src(n.child_by_field_name("operator")?) {
                "+" => a.checked_add(b),
                "-" => a.checked_sub(b),
                "*" => a.checked_mul(b),
                "/" if b != 0 => Some(a / b),
                "%" if b != 0 => Some(a % b),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `(name, value node)` of each declarator of a declaration with an initializer.
fn declared<'t>(k: &Kernel<'t>, st: Node<'t>) -> Vec<(String, Node<'t>)> {
    if st.kind() != "declaration" {
        return Vec::new();
    }
    let mut c = st.walk();
    st.children_by_field_name("declarator", &mut c)
        .filter(|d| d.kind() == "init_declarator")
        .filter_map(|d| {
            let id = d.child_by_field_name("declarator").filter(|i| i.kind() == "identifier")?;
            Some((k.text_of(id).to_string(), d.child_by_field_name("value")?))
        })
        .collect()
}

fn names_any(k: &Kernel, n: Node, set: &[String]) -> bool {
    descendants(n).iter().any(|d| d.kind() == "identifier" && set.iter().any(|s| s == k.text_of(*d)))
}

/// A loop nest's counters (name, type), bounds and innermost body.
type Nest<'t> = (Vec<(String, String)>, Vec<i64>, Node<'t>);

/// A perfect nest of `for (int v = 0; v < B; v++)` loops with known bounds: (counter names with
/// their types, bounds, the innermost body).
fn const_nest<'t>(k: &Kernel<'t>, f: Node<'t>, env: &HashMap<String, i64>) -> Option<Nest<'t>> {
    let mut vars = Vec::new();
    let mut bounds = Vec::new();
    let mut cur = f;
    loop {
        let init = cur.child_by_field_name("initializer").filter(|i| i.kind() == "declaration")?;
        let [(v, start)] = &declared(k, init)[..] else { return None };
        let ty = k.text_of(init.child_by_field_name("type")?).to_string();
        let cond = cur.child_by_field_name("condition").filter(|c| c.kind() == "binary_expression")?;
        let upd = k.text_of(cur.child_by_field_name("update")?).replace(' ', "");
        let left = cond.child_by_field_name("left")?;
        let ok = eval(k.text, *start, env) == Some(0)
            && k.text_of(cond.child_by_field_name("operator")?) == "<"
            && left.kind() == "identifier"
            && k.text_of(left) == v
            && [format!("{v}++"), format!("++{v}"), format!("{v}+=1")].contains(&upd);
        if !ok {
            return None;
        }
        let b = eval(k.text, cond.child_by_field_name("right")?, env).filter(|b| *b > 0)?;
        vars.push((v.clone(), ty));
        bounds.push(b);
        let body = cur.child_by_field_name("body")?;
        let inner = if body.kind() == "compound_statement" {
            match &statements(body)[..] {
                [one] => Some(*one),
                _ => None,
            }
        } else {
            Some(body)
        };
        match inner.filter(|n| n.kind() == "for_statement") {
            Some(next) => cur = next,
            None => return Some((vars, bounds, body)),
        }
    }
}

/// A loop nest of known bounds as one loop over its iterations, the counters re-bound from it.
fn flattened(k: &Kernel, vars: &[(String, String)], bounds: &[i64], body: Node) -> String {
    let total: i64 = bounds.iter().product();
    let mut out = format!("for (long long kp_f = 0; kp_f < {total}LL; kp_f++) {{\n");
    let mut inner = 1i64;
    for ((v, ty), b) in vars.iter().zip(bounds).rev() {
        out += &format!("    const {ty} {v} = ({ty})((kp_f / {inner}LL) % {b}LL);\n");
        inner *= b;
    }
    let text = k.text_of(body);
    let text = if body.kind() == "compound_statement" {
        text.trim().trim_start_matches('{').trim_end_matches('}').trim().to_string()
    } else {
        text.to_string()
    };
    out += &format!("    {text}\n  }}");
    out
}

/// Whether `element` statements assign a name that `row` statements declare: in the thread-per-row
/// form the row's locals are shared by all its elements, where each element had its own before.
pub(super) fn writes_row_names(k: &Kernel, row: &[Node], element: &[Node]) -> bool {
    let row_names: Vec<String> = row
        .iter()
        .flat_map(|s| descendants(*s))
        .filter(|d| matches!(d.kind(), "init_declarator" | "declaration"))
        .filter_map(|d| d.child_by_field_name("declarator").filter(|i| i.kind() == "identifier"))
        .map(|i| k.text_of(i).to_string())
        .collect();
    element.iter().flat_map(|s| descendants(*s)).any(|d| {
        let target = match d.kind() {
            "assignment_expression" => d.child_by_field_name("left"),
            "update_expression" => d.child_by_field_name("argument"),
            _ => None,
        };
        target.is_some_and(|t| t.kind() == "identifier" && row_names.iter().any(|n| n == k.text_of(t)))
    })
}

/// The thread-per-row form of a kernel whose flat units' first statements do a row's work, with
/// the row length.
pub(super) fn per_row_flat(k: &Kernel) -> Option<(String, i64)> {
    let u = units(k)?;
    let [idx] = &u.indices[..] else { return None };
    if !u.fixed.is_empty() {
        return None;
    }
    let nodes = u.only_nodes()?;
    // Known constants: the head's and the unit's own declarations of literal integer values.
    let mut env: HashMap<String, i64> = HashMap::new();
    for st in u.head.iter().chain(&nodes) {
        for (name, value) in declared(k, *st) {
            if let Some(v) = eval(k.text, value, &env) {
                env.insert(name, v);
            }
        }
    }
    // The unit count: the guard's bound, a name or an expression of the kernel's own text (not
    // parsed anew: that would evict the node's parse the recipes share).
    let bound = idx.bound.trim();
    let total = match env.get(bound) {
        Some(v) => *v,
        None => descendants(k.body())
            .into_iter()
            .filter(|n| n.is_named() && k.text_of(*n).trim() == bound)
            .find_map(|n| eval(k.text, n, &env))?,
    };
    // Names derived from the unit index, in order.
    // Integer ones (evaluated from the index) are the index's own; any other is an element's value.
    let mut derived: Vec<String> = vec![idx.name.clone()];
    let mut opaque: Vec<String> = Vec::new();
    let mut derived_decls: Vec<Node> = Vec::new();
    let mut at_zero = env.clone();
    at_zero.insert(idx.name.clone(), 0);
    for st in &nodes {
        let ds = declared(k, *st);
        let all: Vec<String> = derived.iter().chain(&opaque).cloned().collect();
        if ds.is_empty() || !ds.iter().any(|(_, v)| names_any(k, *v, &all)) {
            continue;
        }
        let values: Option<Vec<i64>> = ds.iter().map(|(_, v)| eval(k.text, *v, &at_zero)).collect();
        match values {
            Some(values) => {
                for ((n, _), v) in ds.iter().zip(values) {
                    derived.push(n.clone());
                    at_zero.insert(n.clone(), v);
                }
                derived_decls.push(*st);
            }
            None => opaque.extend(ds.iter().map(|(n, _)| n.clone())),
        }
    }
    // The row's work: the statements before the first (other than a derived declaration) that names
    // a derived name the row's work cannot use.
    let first_loop = nodes.iter().position(|s| s.kind() == "for_statement")?;
    let (_, bounds, _) = const_nest(k, nodes[first_loop], &env)?;
    let row: i64 = bounds.iter().product();
    if row < 2 || total % row != 0 || total / row < 1 {
        return None;
    }
    let rows = total / row;
    // Which derived names are the same over each row: evaluated at every element (sampled when long).
    let values_at = |i: i64| -> Option<Vec<i64>> {
        let mut e = env.clone();
        e.insert(idx.name.clone(), i);
        let mut out = vec![i];
        for st in &derived_decls {
            for (name, value) in declared(k, *st) {
                let v = eval(k.text, value, &e)?;
                e.insert(name, v);
                out.push(v);
            }
        }
        Some(out)
    };
    let step = (row / EXHAUSTIVE).max(1);
    let mut uniform = vec![true; derived.len()];
    let mut sample_rows = vec![0, rows / 2, rows - 1];
    if rows > 1 {
        sample_rows.push(1);
    }
    for r in sample_rows {
        let first = values_at(r * row)?;
        let mut e = 0;
        while e < row {
            let got = values_at(r * row + e)?;
            for (i, (a, b)) in first.iter().zip(&got).enumerate() {
                uniform[i] &= a == b;
            }
            e = if e + step >= row && e != row - 1 { row - 1 } else { e + step };
        }
    }
    let mut per_element: Vec<String> =
        derived.iter().zip(&uniform).filter(|(_, u)| !**u).map(|(n, _)| n.clone()).collect();
    per_element.extend(opaque);
    let split = nodes.iter().position(|s| !derived_decls.contains(s) && names_any(k, *s, &per_element))?;
    let (row_part, element_part) = nodes.split_at(split);
    // The element's statements write no name of the row's (each element ran on its own copy before).
    let writes_row = writes_row_names(k, row_part, element_part);
    if split <= first_loop
        || writes_row
        || !row_part.iter().all(|s| super::hoist::writes_locals_only(k, *s))
        || element_part.iter().any(|s| descendants(*s).iter().any(|d| d.kind() == "return_statement"))
    {
        return None;
    }
    let ty = &idx.ty;
    let mut body = String::from("{\n");
    for h in &u.head {
        body += &format!("  {}\n", k.text_of(*h));
    }
    body += "  long long kp_row = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n";
    body += &format!("  if (kp_row >= {rows}) return;\n");
    body += &format!("  {ty} {} = ({ty})(kp_row * {row}LL);\n", idx.name);
    for s in row_part {
        let text = match (s.kind(), const_nest(k, *s, &env)) {
            ("for_statement", Some((vars, bounds, inner))) if vars.len() > 1 => flattened(k, &vars, &bounds, inner),
            _ => k.text_of(*s).to_string(),
        };
        body += &format!("  {text}\n");
    }
    body += &format!("  for (long long kp_e = 0; kp_e < {row}LL; kp_e++) {{\n");
    body += &format!("    {ty} {} = ({ty})(kp_row * {row}LL + kp_e);\n", idx.name);
    for s in &derived_decls {
        body += &format!("    {}\n", k.text_of(*s));
    }
    for s in element_part {
        body += &format!("    {}\n", k.text_of(*s));
    }
    body += "  }\n}";
    Some((k.with_body(&body), row))
}
