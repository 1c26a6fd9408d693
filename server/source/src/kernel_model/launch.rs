//! A kernel's launch as the file states it: `__launch_bounds__(N)` on the
//! definition and `kernel<<<grid, block>>>` sites whose block is a constant
//! (`256`, `BLOCK`, `dim3(16, 16)`, or a `dim3 b(32, 8)` / `int t = 256`
//! declared in the calling function). Sites that disagree give no block.

use super::macros::{Macros, fold};
use super::{Launch, LaunchSource};
use crate::Function;
use std::collections::HashMap;
use tree_sitter::{Node, Tree};

/// Constant block shapes per kernel name, `None` where sites disagree or one is not constant.
pub type Sites = HashMap<String, Option<[u32; 3]>>;

pub fn launch_sites(tree: &Tree, text: &str, macros: &Macros) -> Sites {
    let mut sites: Sites = HashMap::new();
    let mut stack = vec![(tree.root_node(), None::<Node>)];
    while let Some((node, function)) = stack.pop() {
        let function = if node.kind() == "function_definition" { Some(node) } else { function };
        if node.kind() == "call_expression"
            && let Some(config) = child_of_kind(node, "kernel_call_syntax")
            && let Some(callee) = node.child_by_field_name("function")
        {
            let name_node = if callee.kind() == "template_function" {
                callee.child_by_field_name("name").unwrap_or(callee)
            } else {
                callee
            };
            let name = text[name_node.byte_range()].rsplit("::").next().unwrap_or("").to_string();
            let block = config.named_child(1).and_then(|b| block_shape(b, text, macros, function));
            sites
                .entry(name)
                .and_modify(|old| {
                    if *old != block {
                        *old = None
                    }
                })
                .or_insert(block);
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor).map(|c| (c, function)));
    }
    sites
}

pub fn launch_of(kernel: &Function, tree: &Tree, text: &str, sites: &Sites, macros: &Macros) -> Launch {
    let mut launch = Launch::default();
    if let Some(block) = sites.get(&kernel.name).copied().flatten() {
        launch.block = Some(block);
        launch.source = Some(LaunchSource::LaunchSite);
    }
    let definition = tree.root_node().descendant_for_byte_range(kernel.start_byte, kernel.end_byte);
    let mut stack: Vec<Node> = definition.into_iter().collect();
    while let Some(node) = stack.pop() {
        if node.kind() == "launch_bounds" {
            launch.max_threads =
                node.named_child(0).and_then(|n| fold(n, text, macros, 0)).and_then(|v| u32::try_from(v).ok());
            break;
        }
        // The attribute sits between the return type and the declarator, never in the body.
        if node.kind() == "compound_statement" {
            continue;
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    launch
}

fn child_of_kind<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).find(|c| c.kind() == kind)
}

/// `256`, `BLOCK`, `dim3(16, 16)`, or a name declared in the calling function with such a value.
fn block_shape(node: Node, text: &str, macros: &Macros, function: Option<Node>) -> Option<[u32; 3]> {
    if let Some(v) = fold(node, text, macros, 0) {
        return Some([u32::try_from(v).ok()?, 1, 1]);
    }
    match node.kind() {
        "call_expression" if node.child_by_field_name("function").is_some_and(|f| &text[f.byte_range()] == "dim3") => {
            dims(node.child_by_field_name("arguments")?, text, macros)
        }
        "identifier" => {
            let name = &text[node.byte_range()];
            let value = declared_value(function?, name, text)?;
            match value.kind() {
                "argument_list" | "initializer_list" => dims(value, text, macros),
                _ => block_shape(value, text, macros, None),
            }
        }
        _ => None,
    }
}

/// The value of the one declaration of `name` in `function` (`dim3 b(16, 16)` → the argument list).
fn declared_value<'t>(function: Node<'t>, name: &str, text: &str) -> Option<Node<'t>> {
    let mut found = Vec::new();
    let mut stack = vec![function];
    while let Some(node) = stack.pop() {
        if node.kind() == "init_declarator"
            && node.child_by_field_name("declarator").is_some_and(|d| &text[d.byte_range()] == name)
            && let Some(v) = node.child_by_field_name("value")
        {
            found.push(v);
        }
        if node.kind() == "assignment_expression"
            && node.child_by_field_name("left").is_some_and(|d| &text[d.byte_range()] == name)
        {
            return None;
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    (found.len() == 1).then(|| found[0])
}

fn dims(list: Node, text: &str, macros: &Macros) -> Option<[u32; 3]> {
    let mut out = [1u32; 3];
    let mut cursor = list.walk();
    let args: Vec<Node> = list.named_children(&mut cursor).collect();
    if args.is_empty() || args.len() > 3 {
        return None;
    }
    for (slot, arg) in out.iter_mut().zip(args) {
        *slot = u32::try_from(fold(arg, text, macros, 0)?).ok()?;
    }
    Some(out)
}
