//! A per-unit Welford recurrence read as two passes, so the units recogniser
//! and WarpUnits/BlockUnits see two sums they know how to split across lanes:
//!
//! ```text
//! float mean = 0, m2 = 0;                    float mean = 0, m2 = 0;
//! for (int j = 0; j < n; ++j) {              for (int j = 0; j < n; ++j) { float v = x[j]; mean += v; }
//!   float v = x[j];                  ==>     mean /= n;
//!   float d = v - mean;                      for (int j = 0; j < n; ++j) { float v = x[j]; float d = v - mean; m2 += d * d; }
//!   mean += d / (j + 1);
//!   m2 += d * (v - mean);
//! }
//! ```
//!
//! Both give the row's mean and the sum of squared deviations (`m2`); the two
//! passes are the textbook alternative to Welford's parallel combine, and as
//! stable. Only a rewrite's view: every structural rewrite replaces the whole body.

use crate::kernel::Kernel;
use crate::syntax::{descendants, statements};
use tree_sitter::Node;

fn compact(k: &Kernel, n: Node) -> String {
    k.text_of(n).chars().filter(|c| !c.is_whitespace()).collect()
}

/// `x` without its outer parentheses and `(float)`/`(double)` casts, compacted.
fn plain(s: &str) -> String {
    let mut s = s.to_string();
    for c in ["(float)", "(double)", "static_cast<float>", "static_cast<double>"] {
        s = s.replace(c, "");
    }
    s.replace(['(', ')'], "")
}

fn is_zero(s: &str) -> bool {
    matches!(s, "0" | "0.0" | "0.0f" | "0.f" | "0.0F" | "0.")
}

/// `TARGET += RHS;` (or `TARGET = TARGET + RHS;`): (target, rhs node).
fn accumulation<'t>(k: &Kernel, st: Node<'t>) -> Option<(String, Node<'t>)> {
    let e = st.named_child(0).filter(|e| st.kind() == "expression_statement" && e.kind() == "assignment_expression")?;
    let left = e.child_by_field_name("left").filter(|l| l.kind() == "identifier")?;
    let right = e.child_by_field_name("right")?;
    match k.text_of(e.child_by_field_name("operator")?) {
        "+=" => Some((k.text_of(left).to_string(), right)),
        _ => None,
    }
}

/// The view: the first Welford loop of kernel `name` as two passes; `None` when it has none.
pub(crate) fn two_pass(text: &str, name: &str) -> Option<String> {
    let k = Kernel::find(text, name)?;
    for lp in descendants(k.body()).into_iter().filter(|n| n.kind() == "for_statement") {
        if let Some(with) = rewrite_loop(&k, lp) {
            let mut out = text.to_string();
            out.replace_range(lp.byte_range(), &with);
            return Some(out);
        }
    }
    None
}

fn rewrite_loop(k: &Kernel, lp: Node) -> Option<String> {
    // for (T j = 0; j < N; ++j) { ... }
    let init = lp.child_by_field_name("initializer").filter(|i| i.kind() == "declaration")?;
    let decl = init.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let j = k.text_of(decl.child_by_field_name("declarator").filter(|d| d.kind() == "identifier")?);
    if !is_zero(&compact(k, decl.child_by_field_name("value")?)) {
        return None;
    }
    let cond = lp.child_by_field_name("condition").filter(|c| c.kind() == "binary_expression")?;
    if k.text_of(cond.child_by_field_name("operator")?) != "<" || k.text_of(cond.child_by_field_name("left")?) != j {
        return None;
    }
    let bound = k.text_of(cond.child_by_field_name("right")?);
    let update = compact(k, lp.child_by_field_name("update")?);
    if update != format!("++{j}") && update != format!("{j}++") && update != format!("{j}+=1") {
        return None;
    }
    let body = lp.child_by_field_name("body").filter(|b| b.kind() == "compound_statement")?;
    let sts = statements(body);
    let [before @ .., sd, smean, sm2] = &sts[..] else { return None };
    // T d = E - mean;
    if sd.kind() != "declaration" {
        return None;
    }
    let dd = sd.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let d = k.text_of(dd.child_by_field_name("declarator").filter(|d| d.kind() == "identifier")?);
    let dv = dd.child_by_field_name("value").filter(|v| v.kind() == "binary_expression")?;
    if k.text_of(dv.child_by_field_name("operator")?) != "-" {
        return None;
    }
    let e = dv.child_by_field_name("left")?;
    let mean = k.text_of(dv.child_by_field_name("right").filter(|r| r.kind() == "identifier")?);
    let e_text = compact(k, e);
    // mean += d / (j + 1);
    let (t, r) = accumulation(k, *smean)?;
    let r = plain(&compact(k, r));
    let counts = [format!("{j}+1"), format!("{j}+1.0f"), format!("{j}+1.f"), format!("{j}+1.0")];
    if t != mean || !counts.iter().any(|c| r == format!("{d}/{c}")) {
        return None;
    }
    // m2 += d * (E - mean);
    let (m2, r) = accumulation(k, *sm2)?;
    let r = plain(&compact(k, r));
    let dev = plain(&format!("{e_text}-{mean}"));
    if m2 == mean || m2 == d || (r != format!("{d}*{dev}") && r != format!("{dev}*{d}")) {
        return None;
    }
    // The statements before only declare values that do not involve the accumulators.
    let names = [mean, m2.as_str(), d];
    for b in before {
        if b.kind() != "declaration"
            || descendants(*b).iter().any(|n| n.kind() == "identifier" && names.contains(&k.text_of(*n)))
        {
            return None;
        }
    }
    // mean and m2 start at zero, declared before the loop in the same block.
    let block = lp.parent()?;
    let mut zeroed = 0;
    for st in statements(block) {
        if st.start_byte() >= lp.start_byte() {
            break;
        }
        for d in descendants(st).into_iter().filter(|n| n.kind() == "init_declarator") {
            let name = d.child_by_field_name("declarator").map(|n| k.text_of(n));
            if name.is_some_and(|n| n == mean || n == m2)
                && d.child_by_field_name("value").is_some_and(|v| is_zero(&compact(k, v)))
            {
                zeroed += 1;
            }
        }
    }
    if zeroed != 2 {
        return None;
    }
    let head = &k.text[lp.start_byte()..body.start_byte()];
    let pre: String = before.iter().map(|b| format!(" {}", k.text_of(*b))).collect();
    let d_decl = k.text_of(*sd);
    Some(format!(
        "{head}{{{pre} {mean} += {}; }}\n  {mean} /= {bound};\n  {head}{{{pre} {d_decl} {m2} += {d} * {d}; }}",
        k.text_of(e)
    ))
}
