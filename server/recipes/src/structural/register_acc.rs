//! A sum kept in global memory, read as one kept in a register: a thread that
//! zeroes (or sets) its output element and then adds a loop's terms to it there
//!
//! ```text
//! c[X] = V;                                   T kp_racc = V;
//! for (...) c[X] += E;              ==>       for (...) kp_racc += E;
//!                                             c[X] = kp_racc;
//! ```
//!
//! where `X` does not change in the loop, `E` does not read the output buffer
//! and the loop writes nothing else. The stored value is the original's final
//! one (the same additions in the same order); what is gone is the global
//! read-modify-write per term. Every structural recogniser then sees a
//! loop-carried accumulator (a dot product: [`super::contraction`]). Only a
//! rewrite's view.

use crate::kernel::Kernel;
use crate::syntax::{descendants, has_side_effects, indent_at, single_statement};
use kernelpro_source::units::recognize::{flat, names_in, strip_parens};
use tree_sitter::Node;

/// What a candidate made from this view must say.
pub(crate) const NOTE: &str =
    "the sum the original kept in global memory is kept in a register and stored once (its final value)";

/// The register's name.
const ACC: &str = "kp_racc";

/// `L = V;`: (L, V) with `L` a subscript of a pointer parameter.
fn set<'t>(k: &Kernel, st: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
    let e = st.named_child(0).filter(|e| st.kind() == "expression_statement" && e.kind() == "assignment_expression")?;
    if k.text_of(e.child_by_field_name("operator")?) != "=" {
        return None;
    }
    let l = e.child_by_field_name("left").filter(|l| l.kind() == "subscript_expression")?;
    Some((l, e.child_by_field_name("right")?))
}

/// `L += E` or `L = L + E` (the loop's one statement): E.
fn add_to<'t>(k: &Kernel, st: Node<'t>, target: &str) -> Option<Node<'t>> {
    let e = st.named_child(0).filter(|e| st.kind() == "expression_statement" && e.kind() == "assignment_expression")?;
    let l = e.child_by_field_name("left")?;
    if flat(k, l) != target {
        return None;
    }
    let right = strip_parens(e.child_by_field_name("right")?);
    match k.text_of(e.child_by_field_name("operator")?) {
        "+=" => Some(right),
        "=" if right.kind() == "binary_expression"
            && k.text_of(right.child_by_field_name("operator")?) == "+"
            && flat(k, right.child_by_field_name("left")?) == target =>
        {
            right.child_by_field_name("right")
        }
        _ => None,
    }
}

/// The kernel with its first global accumulation (`c[X] = V; for (...) c[X] += E;`) kept in a register.
pub(crate) fn in_register(text: &str, name: &str) -> Option<String> {
    let k = Kernel::find(text, name)?;
    if text.contains(ACC) {
        return None;
    }
    for block in descendants(k.body()).into_iter().filter(|n| n.kind() == "compound_statement") {
        let sts: Vec<Node> = block.named_children(&mut block.walk()).collect();
        for pair in sts.windows(2) {
            if let Some(edit) = rewrite_pair(&k, pair[0], pair[1]) {
                return Some(edit);
            }
        }
    }
    None
}

fn rewrite_pair(k: &Kernel, first: Node, lp: Node) -> Option<String> {
    let (target, value) = set(k, first)?;
    if lp.kind() != "for_statement" || has_side_effects(value) {
        return None;
    }
    let buffer = k.text_of(target.child_by_field_name("argument").filter(|a| a.kind() == "identifier")?);
    let param = k.param(buffer).filter(|p| p.pointer)?;
    let ty = param.base.replace("const", "").trim().to_string();
    let index = target.child_by_field_name("indices")?;
    let target_text = flat(k, target);
    let body = lp.child_by_field_name("body")?;
    let st = single_statement(body)?;
    let term = add_to(k, st, &target_text)?;
    // The loop's own names (its counter and what its header assigns) must not move the element.
    let header: Vec<&str> = ["initializer", "condition", "update"]
        .iter()
        .filter_map(|f| lp.child_by_field_name(f))
        .flat_map(|n| {
            descendants(n).into_iter().filter_map(|d| match d.kind() {
                "assignment_expression" => d.child_by_field_name("left").map(|l| k.text_of(l)),
                "update_expression" => d.child_by_field_name("argument").map(|l| k.text_of(l)),
                "init_declarator" => d.child_by_field_name("declarator").map(|l| k.text_of(l)),
                _ => None,
            })
        })
        .collect();
    let idx_names = names_in(k, index);
    if idx_names.iter().any(|n| header.contains(n) || *n == buffer)
        || names_in(k, term).contains(&buffer)
        || has_side_effects(term)
        || descendants(index).iter().any(|d| matches!(d.kind(), "call_expression" | "subscript_expression"))
    {
        return None;
    }
    // The header reads nothing of the buffer either.
    if ["initializer", "condition", "update"]
        .iter()
        .filter_map(|f| lp.child_by_field_name(f))
        .any(|n| names_in(k, n).contains(&buffer))
    {
        return None;
    }
    let ind = indent_at(k.text, first.start_byte());
    let header_text = &k.text[lp.start_byte()..body.start_byte()];
    let new = format!(
        "{ty} {ACC} = ({ty})({v});\n{ind}{header_text}{ACC} += {e};\n{ind}{t} = {ACC};",
        v = k.text_of(value),
        e = k.text_of(term),
        t = k.text_of(target),
    );
    let mut source = k.text.to_string();
    source.replace_range(first.start_byte()..lp.end_byte(), &new);
    Some(source)
}

#[cfg(test)]
mod tests {
    use super::in_register;

    #[test]
    fn a_sum_in_global_memory_goes_to_a_register() {
        let text = "__global__ void mm(const int *a, const int *b, int *c, int N) {\n  int row = blockIdx.y * blockDim.y + threadIdx.y;\n  int col = blockIdx.x * blockDim.x + threadIdx.x;\n  c[row * N + col] = 0;\n  for (int k = 0; k < N; k++) {\n    c[row * N + col] += a[row * N + k] * b[k * N + col];\n  }\n}\n";
        let got = in_register(text, "mm").expect("a view");
        assert!(got.contains("int kp_racc = (int)(0);"), "{got}");
        assert!(got.contains("for (int k = 0; k < N; k++) kp_racc += a[row * N + k] * b[k * N + col];"), "{got}");
        assert!(got.contains("c[row * N + col] = kp_racc;"), "{got}");
    }

    #[test]
    fn not_when_the_loop_moves_the_element_or_reads_the_buffer() {
        let moves = "__global__ void f(int *c, const int *a, int N) {\n  int i = threadIdx.x;\n  c[i] = 0;\n  for (int k = 0; k < N; k++) c[i + k] += a[k];\n}\n";
        assert!(in_register(moves, "f").is_none());
        let reads = "__global__ void f(int *c, const int *a, int N) {\n  int i = threadIdx.x;\n  c[i] = 0;\n  for (int k = 0; k < N; k++) c[i] += c[k] * a[k];\n}\n";
        assert!(in_register(reads, "f").is_none());
    }
}
