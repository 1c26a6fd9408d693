//! Tree-sitter queries the syntax-based tools share: function bodies, node
//! walks and small constant folding for sizes written with `#define`s. What
//! each thread touches (thread-dependent values, index strides) is the
//! kernel model's (`kernelpro_source::kernel_model`), not this module's.

use kernelpro_source::Function;
use std::collections::HashMap;
use tree_sitter::{Node, Tree};

/// A parsed file with its text, so node text is one call away.
pub struct Syntax<'a> {
    pub text: &'a str,
    pub tree: Tree,
}

impl<'a> Syntax<'a> {
    pub fn parse(text: &'a str) -> Option<Self> {
        Some(Syntax { text, tree: kernelpro_source::parse_tree(text)? })
    }

    pub fn text(&self, node: Node) -> &'a str {
        &self.text[node.byte_range()]
    }

    /// The `{ … }` node of a function's definition.
    pub fn body(&self, function: &Function) -> Option<Node<'_>> {
        let (start, end) = function.body_bytes?;
        let node = self.tree.root_node().descendant_for_byte_range(start, end)?;
        (node.kind() == "compound_statement").then_some(node)
    }

    /// Integer values of `#define NAME 32` and `const int NAME = 32;` anywhere in the file.
    #[allow(dead_code)] // constant folding for the syntax-based tools (launch sites, array sizes)
    pub fn constants(&self) -> HashMap<String, i64> {
        let mut constants = HashMap::new();
        for node in descendants(self.tree.root_node()) {
            match node.kind() {
                "preproc_def" => {
                    let (Some(name), Some(value)) =
                        (node.child_by_field_name("name"), node.child_by_field_name("value"))
                    else {
                        continue;
                    };
                    if let Ok(v) = self.text(value).trim().parse::<i64>() {
                        constants.insert(self.text(name).to_string(), v);
                    }
                }
                "init_declarator" => {
                    let is_const = node.parent().is_some_and(|d| {
                        self.text(d).starts_with("const")
                            || self.text(d).starts_with("constexpr")
                            || self.text(d).starts_with("static const")
                    });
                    let (Some(name), Some(value)) =
                        (node.child_by_field_name("declarator"), node.child_by_field_name("value"))
                    else {
                        continue;
                    };
                    if is_const
                        && name.kind() == "identifier"
                        && let Some(v) = self.eval(value, &constants)
                    {
                        constants.insert(self.text(name).to_string(), v);
                    }
                }
                _ => {}
            }
        }
        constants
    }

    /// Folds integer literals, known constants, `sizeof` of the built-in types,
    /// casts and `+ - * / % << >>`. Nested past [`MAX_EVAL_DEPTH`] gives `None`.
    pub fn eval(&self, node: Node, constants: &HashMap<String, i64>) -> Option<i64> {
        self.eval_at(node, constants, 0)
    }

    fn eval_at(&self, node: Node, constants: &HashMap<String, i64>, depth: usize) -> Option<i64> {
        if depth > MAX_EVAL_DEPTH {
            return None;
        }
        let sub = |n: Node| self.eval_at(n, constants, depth + 1);
        match node.kind() {
            "number_literal" => parse_int(self.text(node)),
            "identifier" => constants.get(self.text(node)).copied(),
            "parenthesized_expression" => sub(node.named_child(0)?),
            "cast_expression" => sub(node.child_by_field_name("value")?),
            "sizeof_expression" => {
                let ty = node.child_by_field_name("type")?;
                type_size(self.text(ty))
            }
            "binary_expression" => {
                let l = sub(node.child_by_field_name("left")?)?;
                let r = sub(node.child_by_field_name("right")?)?;
                match self.operator(node)? {
                    "+" => l.checked_add(r),
                    "-" => l.checked_sub(r),
                    "*" => l.checked_mul(r),
                    "/" => l.checked_div(r),
                    "%" => l.checked_rem(r),
                    "<<" => u32::try_from(r).ok().and_then(|r| l.checked_shl(r)),
                    ">>" => u32::try_from(r).ok().and_then(|r| l.checked_shr(r)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The operator token of a binary, assignment or update expression.
    #[allow(dead_code)] // constant folding for the syntax-based tools (launch sites, array sizes)
    pub fn operator(&self, node: Node) -> Option<&'a str> {
        node.child_by_field_name("operator").map(|op| self.text(op))
    }
}

/// How deep [`Syntax::eval`] folds nested expressions.
const MAX_EVAL_DEPTH: usize = 64;

/// Bytes of a built-in type named in `sizeof(...)`.
fn type_size(ty: &str) -> Option<i64> {
    let words: Vec<&str> = ty.split_whitespace().filter(|w| !matches!(*w, "const" | "unsigned" | "signed")).collect();
    Some(match words.join(" ").as_str() {
        "char" | "int8_t" | "uint8_t" | "bool" => 1,
        "short" | "half" | "__half" | "__nv_bfloat16" | "int16_t" | "uint16_t" => 2,
        "int" | "float" | "" | "int32_t" | "uint32_t" | "half2" | "__half2" | "__nv_bfloat162" => 4,
        "double" | "long" | "long long" | "size_t" | "int64_t" | "uint64_t" | "float2" | "int2" => 8,
        "float4" | "int4" | "double2" | "uint4" => 16,
        _ => return None,
    })
}

/// Every node under `node`, itself included, in source order.
pub fn descendants(node: Node) -> Vec<Node> {
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

#[allow(dead_code)]
/// `32`, `0x20`, `32u` as an integer; floating literals give `None`.
fn parse_int(literal: &str) -> Option<i64> {
    let digits = literal.trim_end_matches(['u', 'U', 'l', 'L']);
    match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => digits.parse().ok(),
    }
}

/// A floating literal without an `f` suffix, i.e. of type `double`: `2.0`, `1e-3`, `.5`.
pub fn is_double_literal(literal: &str) -> bool {
    let lower = literal.to_ascii_lowercase();
    let floating = !lower.starts_with("0x") && (lower.contains('.') || lower.contains('e'));
    floating && !lower.ends_with('f')
}
