//! Small queries over tree-sitter nodes shared by the recipes.

use tree_sitter::Node;

/// `node` and everything under it, in source order.
pub(crate) fn descendants(node: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        out.push(n);
        let mut cursor = n.walk();
        let children: Vec<Node> = n.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

/// The node's text with all whitespace removed, for comparing small expressions.
pub(crate) fn compact(text: &str, node: Node) -> String {
    text[node.byte_range()].chars().filter(|c| !c.is_whitespace()).collect()
}

/// Identifiers named `name` under `node`.
pub(crate) fn uses<'t>(node: Node<'t>, text: &str, name: &str) -> Vec<Node<'t>> {
    descendants(node).into_iter().filter(|n| n.kind() == "identifier" && &text[n.byte_range()] == name).collect()
}

/// Whether `node` mentions `threadIdx.AXIS` (or the locals in `derived`).
pub(crate) fn mentions(node: Node, text: &str, axis: &str, derived: &[String]) -> bool {
    descendants(node).into_iter().any(|n| match n.kind() {
        "field_expression" => compact(text, n) == format!("threadIdx.{axis}"),
        "identifier" => derived.iter().any(|d| d == &text[n.byte_range()]),
        _ => false,
    })
}

/// Locals whose value derives from `threadIdx.AXIS`, following declarations and assignments to a fixpoint.
pub(crate) fn derived_from_thread(body: Node, text: &str, axis: &str) -> Vec<String> {
    let mut derived: Vec<String> = Vec::new();
    loop {
        let before = derived.len();
        for n in descendants(body) {
            let (name, value) = match n.kind() {
                "init_declarator" => (n.child_by_field_name("declarator"), n.child_by_field_name("value")),
                "assignment_expression" => (n.child_by_field_name("left"), n.child_by_field_name("right")),
                _ => continue,
            };
            let (Some(name), Some(value)) = (name, value) else { continue };
            let name = &text[name.byte_range()];
            if name.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !derived.iter().any(|d| d == name)
                && mentions(value, text, axis, &derived)
            {
                derived.push(name.to_string());
            }
        }
        if derived.len() == before {
            return derived;
        }
    }
}

/// The indentation of the line holding byte `at`.
pub(crate) fn indent_at(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start().len()]
}

/// Whether only whitespace precedes byte `at` on its line.
pub(crate) fn starts_line(text: &str, at: usize) -> bool {
    let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
    text[line_start..at].trim().is_empty()
}

/// Named children of `node`, skipping comments.
pub(crate) fn statements(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect()
}

/// The single statement of a braced or unbraced body.
pub(crate) fn single_statement(node: Node) -> Option<Node> {
    if node.kind() == "compound_statement" {
        let s = statements(node);
        return (s.len() == 1).then(|| s[0]);
    }
    Some(node)
}

/// Whether `node` may change state: an assignment, an increment or a call anywhere in it.
pub(crate) fn has_side_effects(node: Node) -> bool {
    descendants(node)
        .iter()
        .any(|d| matches!(d.kind(), "assignment_expression" | "update_expression" | "call_expression"))
}

/// `if (COND) STATEMENT` without else → (COND, STATEMENT).
pub(crate) fn guarded(st: Node) -> Option<(Node, Node)> {
    if st.kind() != "if_statement" || st.child_by_field_name("alternative").is_some() {
        return None;
    }
    Some((
        st.child_by_field_name("condition")?.child_by_field_name("value")?,
        single_statement(st.child_by_field_name("consequence")?)?,
    ))
}

/// `atomicAdd(ADDR, VAL);` as a statement → (ADDR, VAL).
pub(crate) fn atomic_add<'t>(text: &str, st: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
    let call = st.named_child(0).filter(|c| st.kind() == "expression_statement" && c.kind() == "call_expression")?;
    if &text[call.child_by_field_name("function")?.byte_range()] != "atomicAdd" {
        return None;
    }
    let [addr, val] = statements(call.child_by_field_name("arguments")?)[..] else { return None };
    Some((addr, val))
}

/// Whether `name` is a function or macro `text` defines (whose body a recipe cannot see from a call site).
pub(crate) fn file_defines(text: &str, name: &str) -> bool {
    kernelpro_source::parse(text).functions.iter().any(|f| f.name == name)
        || text.lines().any(|l| {
            l.trim_start().strip_prefix('#').is_some_and(|d| {
                d.trim_start().strip_prefix("define").is_some_and(|m| {
                    let m = m.trim_start();
                    m.strip_prefix(name)
                        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
                })
            })
        })
}
