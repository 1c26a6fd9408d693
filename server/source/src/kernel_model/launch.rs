//! A kernel's launch as the file states it: `__launch_bounds__(N)` on the
//! definition and `kernel<<<grid, block>>>` sites whose block is a constant
//! (`256`, `BLOCK`, `dim3(16, 16)`, or a `dim3 b(32, 8)` / `int t = 256`
//! declared in the calling function). Sites that disagree give no block.

use super::macros::{Macros, fold};
use super::{Launch, LaunchSource};
use crate::Function;
use crate::launch::node_at;
use std::collections::HashMap;
use tree_sitter::{Node, Tree};

/// Constant block shapes per kernel name, `None` where sites disagree or one is not constant.
pub type Sites = HashMap<String, Option<[u32; 3]>>;

pub fn launch_sites(tree: &Tree, text: &str, macros: &Macros) -> Sites {
    let mut sites: Sites = HashMap::new();
    for site in crate::launch::sites(tree, text) {
        let function = site.caller.as_ref().and_then(|c| node_at(tree, c));
        let block =
            site.block().and_then(|b| node_at(tree, &b.bytes)).and_then(|b| block_shape(b, text, macros, function));
        sites
            .entry(site.kernel)
            .and_modify(|old| {
                if *old != block {
                    *old = None
                }
            })
            .or_insert(block);
    }
    sites
}

pub fn launch_of(kernel: &Function, tree: &Tree, text: &str, sites: &Sites, macros: &Macros) -> Launch {
    let mut launch = Launch::default();
    if let Some(block) = sites.get(&kernel.name).copied().flatten() {
        launch.block = Some(block);
        launch.source = Some(LaunchSource::LaunchSite);
    }
    launch.max_threads = crate::launch::bounds(tree, kernel)
        .and_then(|b| node_at(tree, &b.max_threads.bytes))
        .and_then(|n| fold(n, text, macros, 0))
        .and_then(|v| u32::try_from(v).ok());
    launch
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
