//! `__syncthreads()` under a condition that depends on the thread index:
//! threads that skip the branch never reach the barrier, so the block may hang
//! or read unsynchronised data. Uniform conditions (loop counters, `blockIdx`)
//! are fine and do not fire.

use super::finding;
use crate::locate::{instructions_on, listing, sass_functions};
use crate::syntax::{Syntax, descendants};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Finding, Severity};
use kernelpro_source::span_of;
use tree_sitter::Node;

pub struct SyncInDivergentBranch;

const NAME: &str = "SyncInDivergentBranch";

const BARRIERS: &[&str] = &[
    "__syncthreads",
    "__syncthreads_count",
    "__syncthreads_and",
    "__syncthreads_or",
];

impl StaticTool for SyncInDivergentBranch {
    fn name(&self) -> &'static str {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let Some(syntax) = Syntax::parse(input.text) else {
            return Vec::new();
        };
        let dims = ["x", "y", "z"];
        let mut findings = Vec::new();
        for (function, body) in syntax.device_bodies(input.source) {
            let tainted = syntax.thread_dependent(body, &dims);
            for call in descendants(body)
                .into_iter()
                .filter(|n| is_barrier(&syntax, *n))
            {
                let Some(condition) = enclosing_conditions(call, body)
                    .into_iter()
                    .find(|c| syntax.mentions_thread(*c, &dims, &tainted))
                else {
                    continue;
                };
                let line = call.start_position().row as u32 + 1;
                let sass: Vec<_> = input
                    .sass
                    .map(|s| instructions_on(&sass_functions(s, &function.name), input.path, line))
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|i| i.base_opcode() == "BAR")
                    .collect();
                let mut f = finding(
                    NAME,
                    Severity::Warning,
                    span_of(call),
                    &function.name,
                    format!("`{}` inside a branch on the thread index (`{}`): threads that skip it never reach the barrier", syntax.text(call), syntax.text(condition)),
                )
                .with_evidence("condition", syntax.text(condition))
                .with_evidence("condition line", condition.start_position().row + 1)
                .with_guidance("Move the barrier out of the branch so every thread of the block reaches it: guard only the work (`if (cond) { … }` then `__syncthreads();`).");
                if !sass.is_empty() {
                    f = f.with_evidence("sass", listing(&sass, 4));
                }
                findings.push(f);
            }
        }
        findings
    }
}

fn is_barrier(syntax: &Syntax, node: Node) -> bool {
    node.kind() == "call_expression"
        && node
            .child_by_field_name("function")
            .is_some_and(|f| BARRIERS.contains(&syntax.text(f)))
}

/// Conditions of the branches and loops around `node`, innermost first, up to `body`.
fn enclosing_conditions<'t>(node: Node<'t>, body: Node<'t>) -> Vec<Node<'t>> {
    let mut conditions = Vec::new();
    let mut child = node;
    while let Some(parent) = child.parent() {
        if parent.id() == body.id() {
            break;
        }
        let condition = match parent.kind() {
            "if_statement"
            | "while_statement"
            | "do_statement"
            | "for_statement"
            | "switch_statement"
            | "conditional_expression" => parent.child_by_field_name("condition"),
            _ => None,
        };
        // `if (c)` holds its expression in a condition clause; report the expression.
        let condition = condition.map(|c| {
            if c.kind() == "condition_clause" {
                c.child_by_field_name("value").unwrap_or(c)
            } else {
                c
            }
        });
        if let Some(c) = condition.filter(|c| c.id() != child.id()) {
            conditions.push(c);
        }
        child = parent;
    }
    conditions
}
