//! The one syntax view of a `.cu` file that the lints, the recipes and the
//! CuTe recipe share: a parsed file with its text ([`Syntax`]), node walks,
//! small constant folding for sizes written with `#define`s, and the small
//! statement shapes the rewrites match (guards, `atomicAdd` statements). What
//! each thread touches (thread-dependent values, index strides) is the
//! kernel model's ([`crate::kernel_model`]), not this module's.

use crate::Function;
use std::collections::HashMap;
use tree_sitter::{Node, Tree};

/// A parsed file with its text, so node text is one call away.
pub struct Syntax<'a> {
    pub text: &'a str,
    pub tree: Tree,
}

impl<'a> Syntax<'a> {
    pub fn parse(text: &'a str) -> Option<Self> {
        Some(Syntax { text, tree: crate::parse_tree(text)? })
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

/// The node's text with all whitespace removed, for comparing small expressions.
pub fn compact(text: &str, node: Node) -> String {
    text[node.byte_range()].chars().filter(|c| !c.is_whitespace()).collect()
}

/// Identifiers named `name` under `node`.
pub fn uses<'t>(node: Node<'t>, text: &str, name: &str) -> Vec<Node<'t>> {
    descendants(node).into_iter().filter(|n| n.kind() == "identifier" && &text[n.byte_range()] == name).collect()
}

/// Whether `node` mentions `threadIdx.AXIS` (or the locals in `derived`).
pub fn mentions(node: Node, text: &str, axis: &str, derived: &[String]) -> bool {
    descendants(node).into_iter().any(|n| match n.kind() {
        "field_expression" => compact(text, n) == format!("threadIdx.{axis}"),
        "identifier" => derived.iter().any(|d| d == &text[n.byte_range()]),
        _ => false,
    })
}

/// Locals whose value derives from `threadIdx.AXIS`, following declarations and assignments to a fixpoint.
pub fn derived_from_thread(body: Node, text: &str, axis: &str) -> Vec<String> {
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
pub fn indent_at(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start().len()]
}

/// Whether only whitespace precedes byte `at` on its line.
pub fn starts_line(text: &str, at: usize) -> bool {
    let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
    text[line_start..at].trim().is_empty()
}

/// Named children of `node`, skipping comments.
pub fn statements(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect()
}

/// The single statement of a braced or unbraced body.
pub fn single_statement(node: Node) -> Option<Node> {
    if node.kind() == "compound_statement" {
        let s = statements(node);
        return (s.len() == 1).then(|| s[0]);
    }
    Some(node)
}

/// Whether `node` may change state: an assignment, an increment or a call anywhere in it.
pub fn has_side_effects(node: Node) -> bool {
    descendants(node)
        .iter()
        .any(|d| matches!(d.kind(), "assignment_expression" | "update_expression" | "call_expression"))
}

/// `if (COND) STATEMENT` without else → (COND, STATEMENT).
pub fn guarded(st: Node) -> Option<(Node, Node)> {
    if st.kind() != "if_statement" || st.child_by_field_name("alternative").is_some() {
        return None;
    }
    Some((
        st.child_by_field_name("condition")?.child_by_field_name("value")?,
        single_statement(st.child_by_field_name("consequence")?)?,
    ))
}

/// `atomicAdd(ADDR, VAL);` as a statement → (ADDR, VAL).
pub fn atomic_add<'t>(text: &str, st: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
    let call = st.named_child(0).filter(|c| st.kind() == "expression_statement" && c.kind() == "call_expression")?;
    if &text[call.child_by_field_name("function")?.byte_range()] != "atomicAdd" {
        return None;
    }
    let [addr, val] = statements(call.child_by_field_name("arguments")?)[..] else { return None };
    Some((addr, val))
}

/// Whether `name` is a function or macro `text` defines (whose body a recipe cannot see from a call site).
pub fn file_defines(text: &str, name: &str) -> bool {
    crate::parse(text).functions.iter().any(|f| f.name == name)
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

/// `text` with `edits` (byte ranges into `text`, replacements) applied: the one splice of text edits.
/// Of overlapping edits the first to start (the longest at one start) is kept and the others left out;
/// insertions at one place keep their order.
pub fn edited(text: &str, edits: impl IntoIterator<Item = (std::ops::Range<usize>, String)>) -> String {
    let mut edits: Vec<_> = edits.into_iter().collect();
    edits.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
    let mut kept: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for (r, with) in edits {
        if kept.last().is_some_and(|(k, _)| r.start < k.end) {
            continue;
        }
        kept.push((r, with));
    }
    let mut out = text.to_string();
    for (r, with) in kept.into_iter().rev() {
        out.replace_range(r, &with);
    }
    out
}

/// The text of `range` in `text` with `edits` (byte ranges into `text`, inside `range`) applied, as [`edited`].
pub fn edited_within(
    text: &str,
    range: std::ops::Range<usize>,
    edits: impl IntoIterator<Item = (std::ops::Range<usize>, String)>,
) -> String {
    let at = range.start;
    edited(&text[range], edits.into_iter().map(|(r, w)| (r.start - at..r.end - at, w)))
}

#[cfg(test)]
mod tests {
    use super::edited;

    fn check(text: &str, edits: &[(std::ops::Range<usize>, &str)], expected: &str) {
        assert_eq!(edited(text, edits.iter().map(|(r, w)| (r.clone(), w.to_string()))), expected);
    }

    #[test]
    fn edits_splice_in_any_order() {
        // Given in any order, applied as of the original text.
        check("a + b * c", &[(8..9, "z"), (0..1, "x")], "x + b * z");
        // Of overlapping edits the first to start (the longest at one start) wins.
        check("a + b * c", &[(4..5, "y"), (4..9, "w"), (0..9, "all")], "all");
        check("a + b * c", &[(4..5, "y"), (4..9, "w")], "a + w");
        // Insertions at one place keep their order.
        check("ab", &[(1..1, "1"), (1..1, "2")], "a12b");
    }
}
