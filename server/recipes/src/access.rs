//! How a kernel uses its pointer parameters: which are only ever read through
//! `p[i]`, and which loads are plain reads that `__ldg` may serve.

use crate::kernel::Kernel;
use crate::syntax::uses;
use tree_sitter::Node;

/// Whether the subscript `p[i]` is written (assigned, incremented, or its address taken for anything but `__ldg`).
fn written(sub: Node, text: &str) -> bool {
    let Some(parent) = sub.parent() else { return false };
    match parent.kind() {
        "assignment_expression" => parent.child_by_field_name("left") == Some(sub),
        "update_expression" => true,
        "pointer_expression" => !is_ldg_argument(parent, text),
        _ => false,
    }
}

/// `&p[i]` as the argument of `__ldg(...)`.
fn is_ldg_argument(address: Node, text: &str) -> bool {
    let call = address.parent().and_then(|args| args.parent());
    call.is_some_and(|c| {
        c.kind() == "call_expression"
            && c.child_by_field_name("function").is_some_and(|f| &text[f.byte_range()] == "__ldg")
    })
}

/// The `p[i]` nodes of pointer `name` when every use of it is a plain read
/// through a subscript (possibly inside `__ldg(&p[i])`); `None` otherwise.
pub(crate) fn read_only_loads<'t>(kernel: &'t Kernel, name: &str) -> Option<Vec<Node<'t>>> {
    let mut loads = Vec::new();
    for id in uses(kernel.body(), kernel.text, name) {
        let sub = id
            .parent()
            .filter(|p| p.kind() == "subscript_expression" && p.child_by_field_name("argument") == Some(id))?;
        if written(sub, kernel.text) {
            return None;
        }
        loads.push(sub);
    }
    Some(loads)
}

/// Whether the load is already `__ldg(&p[i])`.
pub(crate) fn under_ldg(sub: Node, text: &str) -> bool {
    sub.parent().is_some_and(|p| p.kind() == "pointer_expression" && is_ldg_argument(p, text))
}

/// Whether `node` only reads: no assignment or increment, and every
/// identifier is one of `locals`, a scalar parameter, a pointer parameter
/// outside `excluded` that the kernel never writes, or a called function's name.
pub(crate) fn reads_only(kernel: &Kernel, node: Node, locals: &[&str], excluded: &[&str]) -> bool {
    crate::syntax::descendants(node).into_iter().all(|n| match n.kind() {
        "assignment_expression" | "update_expression" | "comma_expression" => false,
        "identifier" => {
            let name = kernel.text_of(n);
            let called = n
                .parent()
                .is_some_and(|p| p.kind() == "call_expression" && p.child_by_field_name("function") == Some(n));
            (called && !kernel.file_defines(name))
                || locals.contains(&name)
                || kernel.param(name).is_some_and(|p| {
                    !p.pointer || (!excluded.contains(&name) && read_only_loads(kernel, name).is_some())
                })
        }
        _ => true,
    })
}
