//! Coalescing by swapping the roles of `threadIdx.x` and `threadIdx.y` in a 2D
//! kernel whose block is square: each block still does the same work (threads
//! are only relabeled), but consecutive lanes then walk the fastest index.
//! Skipped when anything depends on which threads share a warp.

use crate::edit::Edits;
use crate::kernel::Kernel;
use crate::syntax::{compact, derived_from_thread, descendants, mentions};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct LoopInterchange;

/// Names whose meaning depends on how threads are grouped into warps.
const WARP_LEVEL: &[&str] = &[
    "warpSize",
    "__syncwarp",
    "__activemask",
    "__shfl",
    "__ballot",
    "__any",
    "__all",
    "__match",
    "__reduce",
    "volatile",
];

/// The `+` terms of an index expression, left to right (an explicit stack: a
/// sum of 100,000 terms is as deep a tree as the user wrote).
fn terms<'t>(node: Node<'t>, text: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        let node = if node.kind() == "parenthesized_expression" { node.named_child(0).unwrap_or(node) } else { node };
        let plus = node.kind() == "binary_expression"
            && node.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "+");
        match (plus, node.child_by_field_name("left"), node.child_by_field_name("right")) {
            (true, Some(l), Some(r)) => stack.extend([r, l]),
            _ => out.push(node),
        }
    }
    out
}

/// How many global accesses have the x index in a slow (multiplied) term and in the fast (added) term.
fn x_positions(k: &Kernel) -> (usize, usize) {
    let derived = derived_from_thread(k.body(), k.text, "x");
    let (mut slow, mut fast) = (0, 0);
    for sub in descendants(k.body()).into_iter().filter(|n| n.kind() == "subscript_expression") {
        let global =
            sub.child_by_field_name("argument").is_some_and(|a| k.param(k.text_of(a)).is_some_and(|p| p.pointer));
        let Some(index) = sub.child_by_field_name("indices").and_then(|i| i.named_child(0)) else {
            continue;
        };
        if !global {
            continue;
        }
        for term in terms(index, k.text) {
            let product = term.kind() == "binary_expression"
                && term.child_by_field_name("operator").is_some_and(|o| k.text_of(o) == "*");
            if mentions(term, k.text, "x", &derived) {
                if product { slow += 1 } else { fast += 1 }
            }
        }
    }
    (slow, fast)
}

impl Recipe for LoopInterchange {
    fn name(&self) -> &'static str {
        "LoopInterchange"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::Uncoalesced, Code::MemoryCoalescing]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else {
            return Vec::new();
        };
        let square = matches!(k.fixed_block(), Some([b, c, 1]) if b == c && b > 1);
        let nodes = descendants(k.body());
        let warp_level = nodes.iter().any(|n| {
            matches!(n.kind(), "identifier" | "type_qualifier")
                && WARP_LEVEL.iter().any(|w| k.text_of(*n).starts_with(w))
        });
        let (slow, fast) = x_positions(&k);
        if !square || warp_level || slow == 0 || fast > 0 {
            return Vec::new();
        }
        let mut edits = Edits::default();
        for n in nodes.into_iter().filter(|n| n.kind() == "field_expression") {
            let swapped = match compact(text, n).as_str() {
                "threadIdx.x" => "y",
                "threadIdx.y" => "x",
                _ => continue,
            };
            let Some(field) = n.child_by_field_name("field") else {
                continue;
            };
            edits.replace(field.byte_range(), swapped);
        }
        let note =
            format!("swap threadIdx.x and threadIdx.y so lanes walk the fastest index ({slow} strided accesses)");
        edits.apply(text).map(|source| Rewrite { source, note }).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sum of 100,000 terms is a tree 100,000 deep: its terms come out in
    /// order, on a tokio worker's 2 MiB stack.
    #[test]
    fn terms_of_a_long_sum() {
        let got = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let text = format!("int i = (a * 2){};", (0..100_000).map(|i| format!(" + t{i}")).collect::<String>());
                let tree = kernelpro_source::parse_tree(&text).unwrap();
                let init = crate::syntax::descendants(tree.root_node())
                    .into_iter()
                    .find(|n| n.kind() == "init_declarator")
                    .unwrap();
                let value = init.child_by_field_name("value").unwrap();
                terms(value, &text).iter().map(|n| text[n.byte_range()].to_string()).collect::<Vec<_>>()
            })
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert_eq!(got.len(), 100_001);
        assert_eq!((got[0].as_str(), got[1].as_str(), got[100_000].as_str()), ("a * 2", "t0", "t99999"));
    }
}
