//! How a kernel uses its pointer parameters: which are only ever read through
//! `p[i]`, and which loads are plain reads that `__ldg` may serve.

use crate::kernel::Kernel;
use crate::syntax::uses;
use tree_sitter::Node;

/// The run-time test that every buffer named (each once) is 16-byte aligned: a float4 rewrite takes
/// its vector loop only where it holds, since a caller may pass `x + 1`.
pub(crate) fn aligned_16<'a>(buffers: impl IntoIterator<Item = &'a str>) -> String {
    let mut casts: Vec<String> = Vec::new();
    for b in buffers {
        let cast = format!("(unsigned long long)({b})");
        if !casts.contains(&cast) {
            casts.push(cast);
        }
    }
    format!("(({}) % 16 == 0)", casts.join(" | "))
}

/// Whether the subscript `p[i]` is written: assigned, incremented, its address taken for anything
/// but `__ldg` (`atomicAdd(&p[i], v)`, `atomicCAS((int*)&p[i], ...)`), or passed to a function of
/// the file (which may take it by reference), also through parentheses, a member (`p[i].x = v`)
/// or a further subscript (`p[i][j] = v`).
fn written(sub: Node, text: &str) -> bool {
    let mut place = sub;
    while let Some(parent) = place.parent() {
        let through = match parent.kind() {
            "parenthesized_expression" => true,
            "field_expression" | "subscript_expression" => parent.child_by_field_name("argument") == Some(place),
            _ => false,
        };
        if !through {
            break;
        }
        place = parent;
    }
    let Some(parent) = place.parent() else { return false };
    match parent.kind() {
        "assignment_expression" => parent.child_by_field_name("left") == Some(place),
        "update_expression" => true,
        "pointer_expression" => !is_ldg_argument(parent, text),
        // An argument: written where a function of the file takes it by non-const reference, or
        // where the file's own function-like macro takes it (`#define F4(p) (reinterpret_cast<float4*>(&(p))[0])`
        // casts its address to a non-const pointer and may be assigned: `F4(y[i]) = v`); builtins and
        // atomics are read as taking values.
        "argument_list" => {
            let Some(f) = parent.parent().and_then(|c| c.child_by_field_name("function")) else { return true };
            let name = &text[f.byte_range()];
            if function_like_macro(text, name) {
                return true;
            }
            let mut cursor = parent.walk();
            let at = parent.named_children(&mut cursor).position(|a| a == place);
            let functions = kernelpro_source::parse(text).functions;
            let by_reference = functions.iter().filter(|g| g.name == name).any(|g| {
                at.and_then(|at| g.params.get(at))
                    .is_none_or(|p| p.ty.contains('&') && !p.ty.split_whitespace().any(|w| w == "const"))
            });
            by_reference || name == "swap" || name == "std::swap"
        }
        _ => false,
    }
}

/// Whether `text` defines `name` as a function-like macro (`#define NAME(`).
fn function_like_macro(text: &str, name: &str) -> bool {
    text.lines().any(|l| {
        l.trim_start()
            .strip_prefix('#')
            .and_then(|d| d.trim_start().strip_prefix("define"))
            .and_then(|m| m.trim_start().strip_prefix(name))
            .is_some_and(|rest| rest.starts_with('('))
    })
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
