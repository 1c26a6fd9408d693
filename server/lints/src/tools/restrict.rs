//! Read-only pointer parameters of a kernel that lack `const`, or lack
//! `__restrict__` while another pointer is written (so the compiler must assume
//! aliasing and cannot use the read-only data path).
//!
//! A pointer is read-only when every use in the body only loads through it:
//! never on the left of an assignment, never `++`/`--`'d through, never passed
//! to a call (atomics and device functions may write), never copied.

use super::finding;
use crate::syntax::{Syntax, descendants};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Finding, Severity};
use tree_sitter::Node;

pub struct MissingRestrict;

const NAME: &str = "MissingRestrict";

/// Calls that only read through the pointer they are given.
const READ_ONLY_CALLS: &[&str] = &["__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"];

impl StaticTool for MissingRestrict {
    fn name(&self) -> &'static str {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let Some(syntax) = Syntax::parse(input.text) else {
            return Vec::new();
        };
        let mut findings = Vec::new();
        for kernel in input.source.kernels() {
            let Some(body) = syntax.body(kernel) else {
                continue;
            };
            let pointers: Vec<_> = kernel.params.iter().filter(|p| p.pointer).collect();
            let written: Vec<&str> = pointers
                .iter()
                .filter(|p| !read_only(&syntax, body, &p.name))
                .map(|p| p.name.as_str())
                .collect();
            for param in pointers
                .iter()
                .filter(|p| !written.contains(&p.name.as_str()))
            {
                let missing_const = !param.is_const;
                let missing_restrict = !param.restrict && !written.is_empty();
                if !missing_const && !missing_restrict {
                    continue;
                }
                let missing = match (missing_const, missing_restrict) {
                    (true, true) => "`const` and `__restrict__`",
                    (true, false) => "`const`",
                    _ => "`__restrict__`",
                };
                let base = if param.base.is_empty() {
                    "T"
                } else {
                    param.base.as_str()
                };
                let restrict_others = if written.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", and mark the written pointers ({}) `__restrict__` too if they never overlap it",
                        written.join(", ")
                    )
                };
                findings.push(
                    finding(
                        NAME,
                        Severity::Information,
                        param.span,
                        &kernel.name,
                        format!("`{}` is only read in `{}` but is declared without {missing}", param.name, kernel.name),
                    )
                    .with_evidence("declared", &param.ty)
                    .with_evidence("written pointers", if written.is_empty() { "none".to_string() } else { written.join(", ") })
                    .with_guidance(format!(
                        "Declare it `const {base}* __restrict__ {}` so loads can use the read-only path (LDG.CONSTANT){restrict_others}.",
                        param.name
                    )),
                );
            }
        }
        findings
    }
}

/// Whether every use of `name` in `body` only reads through it.
fn read_only(syntax: &Syntax, body: Node, name: &str) -> bool {
    descendants(body)
        .into_iter()
        .filter(|n| n.kind() == "identifier" && syntax.text(*n) == name)
        .all(|use_| only_loads(syntax, use_))
}

/// Climbs from a use of the pointer through indexing, dereference and pointer
/// arithmetic to the access, then asks what the access's parent does with it.
fn only_loads(syntax: &Syntax, use_: Node) -> bool {
    let mut node = use_;
    let mut dereferenced = false;
    while let Some(parent) = node.parent() {
        let is_operand = parent.child_by_field_name("argument") == Some(node);
        match parent.kind() {
            "subscript_expression" | "field_expression" if is_operand => dereferenced = true,
            "pointer_expression" if syntax.text(parent).starts_with('*') => dereferenced = true,
            // `&p[i]` hands out an address again.
            "pointer_expression" => dereferenced = false,
            "parenthesized_expression" | "binary_expression" | "cast_expression" => {}
            "subscript_argument_list" | "condition_clause" => return true,
            "assignment_expression" => {
                return parent.child_by_field_name("left") != Some(node) && dereferenced;
            }
            "update_expression" => return false,
            "argument_list" => {
                let callee = parent
                    .parent()
                    .and_then(|c| c.child_by_field_name("function"))
                    .map(|f| syntax.text(f));
                return callee.is_some_and(|c| READ_ONLY_CALLS.contains(&c));
            }
            "init_declarator" => return dereferenced,
            _ => return dereferenced,
        }
        node = parent;
    }
    true
}
