//! The file's `#define`s, object-like and function-like, with their bodies
//! parsed as expressions so the evaluator can model them at the use site
//! (`IDX(r, c)` → the body with `r`, `c` bound to the arguments' values).
//! Bodies that are not one expression stay unknown.

use std::collections::HashMap;
use tree_sitter::{Node, Tree};

/// Wrapping a body this way makes tree-sitter parse it as one expression.
const PREFIX: &str = "auto __kp_macro = (";

pub struct Macro {
    /// `None` for an object-like macro.
    pub params: Option<Vec<String>>,
    /// The wrapper text the tree was parsed from.
    pub text: String,
    tree: Option<Tree>,
}

impl Macro {
    fn new(params: Option<Vec<String>>, body: &str) -> Macro {
        let body = body.trim().trim_end_matches('\\').trim();
        let text = format!("{PREFIX}{body});\n");
        let tree = crate::parse_tree(&text).filter(|t| !t.root_node().has_error() && !body.is_empty());
        Macro { params, text, tree }
    }

    /// The body's expression node (in [`Macro::text`]), when the body is one expression.
    pub fn expr(&self) -> Option<Node<'_>> {
        let tree = self.tree.as_ref()?;
        let start = PREFIX.len() - 1;
        let node = tree.root_node().descendant_for_byte_range(start, start + 1)?;
        // The `(` token's parent is the parenthesized expression around the body.
        let paren = if node.kind() == "parenthesized_expression" { node } else { node.parent()? };
        (paren.kind() == "parenthesized_expression").then_some(paren)
    }
}

#[derive(Default)]
pub struct Macros {
    map: HashMap<String, Macro>,
}

impl Macros {
    pub fn collect(tree: &Tree, text: &str) -> Macros {
        let mut map = HashMap::new();
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            match node.kind() {
                "preproc_def" | "preproc_function_def" => {
                    let Some(name) = node.child_by_field_name("name") else {
                        continue;
                    };
                    let body = node.child_by_field_name("value").map(|v| &text[v.byte_range()]).unwrap_or("");
                    let params = node.child_by_field_name("parameters").map(|p| {
                        let mut cursor = p.walk();
                        p.named_children(&mut cursor).map(|n| text[n.byte_range()].to_string()).collect()
                    });
                    map.insert(text[name.byte_range()].to_string(), Macro::new(params, body));
                }
                // Function bodies hold no #defines worth modelling at this level; blocks may.
                _ => {
                    let mut cursor = node.walk();
                    stack.extend(node.children(&mut cursor));
                }
            }
        }
        Macros { map }
    }

    pub fn get(&self, name: &str) -> Option<&Macro> {
        self.map.get(name)
    }

    /// An object-like macro's integer value, folding other macros up to a depth.
    pub fn integer(&self, name: &str) -> Option<i64> {
        self.integer_at(name, 0)
    }

    fn integer_at(&self, name: &str, depth: usize) -> Option<i64> {
        let m = self.map.get(name).filter(|m| m.params.is_none())?;
        fold(m.expr()?, &m.text, self, depth + 1)
    }
}

const MAX_DEPTH: usize = 32;

/// Folds an integer constant expression: literals, object-like macros, `+ - * / % << >>`, casts.
pub fn fold(node: Node, text: &str, macros: &Macros, depth: usize) -> Option<i64> {
    if depth > MAX_DEPTH {
        return None;
    }
    let t = &text[node.byte_range()];
    match node.kind() {
        "number_literal" => parse_int(t),
        "identifier" => macros.integer_at(t, depth),
        "parenthesized_expression" => fold(node.named_child(0)?, text, macros, depth + 1),
        "cast_expression" => fold(node.child_by_field_name("value")?, text, macros, depth + 1),
        "binary_expression" => {
            let l = fold(node.child_by_field_name("left")?, text, macros, depth + 1)?;
            let r = fold(node.child_by_field_name("right")?, text, macros, depth + 1)?;
            match &text[node.child_by_field_name("operator")?.byte_range()] {
                "+" => l.checked_add(r),
                "-" => l.checked_sub(r),
                "*" => l.checked_mul(r),
                "/" => l.checked_div(r),
                "%" => l.checked_rem(r),
                "<<" => l.checked_shl(u32::try_from(r).ok()?),
                ">>" => l.checked_shr(u32::try_from(r).ok()?),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `32`, `0x20`, `32u`, `256L` as an integer; floating literals give `None`.
pub fn parse_int(literal: &str) -> Option<i64> {
    let digits = literal.trim_end_matches(['u', 'U', 'l', 'L']).replace('\'', "");
    match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => digits.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_and_function_macros() {
        let text = "#define N (4 * 256)\n#define M N + 1\n#define IDX(r, c) ((r) * C + (c))\n#define STMT do { x(); } while (0)\n";
        let tree = crate::parse_tree(text).unwrap();
        let macros = Macros::collect(&tree, text);
        assert_eq!(macros.integer("N"), Some(1024));
        assert_eq!(macros.integer("M"), Some(1025));
        let idx = macros.get("IDX").unwrap();
        assert_eq!(idx.params.as_deref(), Some(&["r".to_string(), "c".to_string()][..]));
        assert_eq!(&idx.text[idx.expr().unwrap().byte_range()], "(((r) * C + (c)))");
        assert!(macros.get("STMT").unwrap().expr().is_none());
    }
}
