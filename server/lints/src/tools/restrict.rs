//! Pointer parameters without `__restrict__` where aliasing can cost: a
//! pointer stored to and another loaded in the same loop (the compiler must
//! reload after every store and cannot move loads ahead of stores), or a
//! pointer loaded more than once around a store through another (the second
//! load cannot reuse the first). At most one note per kernel; parameters a
//! kernel never loads from (unused, or only stored to) are not called "read".
//!
//! Accesses through local pointers derived from a parameter
//! (`const float* row = x + r * C`) count as the parameter's. A pointer handed
//! to a call (a device function, an atomic) counts as stored to.

use super::finding;
use crate::syntax::{Syntax, descendants};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_source::Param;
use std::collections::HashMap;
use tree_sitter::Node;

pub struct MissingRestrict;

const NAME: Code = Code::MissingRestrict;

/// Calls that only read through the pointer they are given.
const READ_ONLY_CALLS: &[&str] = &["__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Access {
    Load,
    Store,
    /// Not a memory access (an address computed, a comparison).
    None,
}

/// One load or store through a parameter: byte offset, 0-based line, enclosing loops.
struct Use {
    at: usize,
    line: u32,
    loops: Vec<usize>,
}

impl StaticTool for MissingRestrict {
    fn code(&self) -> Code {
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
            let pointers: Vec<&Param> = kernel.params.iter().filter(|p| p.pointer).collect();
            if pointers.len() < 2 || pointers.iter().all(|p| p.restrict) {
                continue;
            }
            let (loads, stores) = accesses(&syntax, body, &pointers);
            let Some(cost) = aliasing_cost(&pointers, &loads, &stores) else {
                continue;
            };
            let read = pointers.iter().find(|p| p.name == cost.read).expect("a parameter");
            let written = pointers.iter().find(|p| p.name == cost.written).expect("a parameter");
            let lacking: Vec<&str> =
                [written, read].into_iter().filter(|p| !p.restrict).map(|p| p.name.as_str()).collect();
            let declare = |p: &Param| {
                let base = if p.base.is_empty() { "T" } else { p.base.as_str() };
                let konst = if p.name == cost.read || p.is_const { "const " } else { "" };
                format!("`{konst}{base}* __restrict__ {}`", p.name)
            };
            findings.push(
                finding(
                    NAME,
                    Severity::Information,
                    if read.restrict { written.span } else { read.span },
                    &kernel.name,
                    format!(
                        "`{}` is loaded {} a store through `{}`, and {} `__restrict__`: the compiler must assume they overlap",
                        cost.read,
                        cost.where_,
                        cost.written,
                        match lacking.as_slice() {
                            [one] => format!("`{one}` is not"),
                            _ => "neither is".to_string(),
                        }
                    ),
                )
                .with_evidence("stored through", &cost.written)
                .with_evidence("loaded through", &cost.read)
                .with_evidence("where", &cost.evidence)
                .with_guidance(format!(
                    "If they never overlap, declare {} and {} (every pointer parameter of `{}` that never aliases another), so loads can be kept in registers, moved ahead of stores and use the read-only path.",
                    declare(read),
                    declare(written),
                    kernel.name
                )),
            );
        }
        findings
    }
}

struct Cost {
    written: String,
    read: String,
    /// `in the loop at line 12 with` / `3 times around`.
    where_: String,
    evidence: String,
}

/// The first (written, read) pair whose aliasing costs, loops first.
fn aliasing_cost(
    pointers: &[&Param],
    loads: &HashMap<String, Vec<Use>>,
    stores: &HashMap<String, Vec<Use>>,
) -> Option<Cost> {
    let pairs = || {
        pointers.iter().flat_map(move |w| {
            pointers
                .iter()
                .filter(move |r| r.name != w.name && !(r.restrict && w.restrict))
                .filter_map(move |r| Some((stores.get(&w.name)?, loads.get(&r.name)?, &w.name, &r.name)))
        })
    };
    for (ws, rs, w, r) in pairs() {
        if let Some((s, l)) =
            ws.iter().find_map(|s| rs.iter().find(|l| l.loops.iter().any(|id| s.loops.contains(id))).map(|l| (s, l)))
        {
            return Some(Cost {
                written: w.clone(),
                read: r.clone(),
                where_: "in the same loop as".into(),
                evidence: format!("load on line {}, store on line {}, in one loop", l.line + 1, s.line + 1),
            });
        }
    }
    for (ws, rs, w, r) in pairs() {
        let (Some(first), Some(last)) = (rs.iter().map(|u| u.at).min(), rs.iter().map(|u| u.at).max()) else {
            continue;
        };
        if rs.len() >= 2
            && let Some(s) = ws.iter().find(|s| first < s.at && s.at < last)
        {
            return Some(Cost {
                written: w.clone(),
                read: r.clone(),
                where_: format!("{} times around", rs.len()),
                evidence: format!("{} loads, a store on line {} between them", rs.len(), s.line + 1),
            });
        }
    }
    None
}

/// Loads and stores through each pointer parameter (and the local pointers derived from it).
fn accesses(
    syntax: &Syntax,
    body: Node,
    pointers: &[&Param],
) -> (HashMap<String, Vec<Use>>, HashMap<String, Vec<Use>>) {
    let nodes = descendants(body);
    let mut owner: HashMap<String, String> = pointers.iter().map(|p| (p.name.clone(), p.name.clone())).collect();
    // `T* row = x + r * C;` makes `row` an access path of `x` (declarations come in source order).
    for decl in nodes.iter().filter(|n| n.kind() == "init_declarator") {
        let (Some(declarator), Some(value)) =
            (decl.child_by_field_name("declarator"), decl.child_by_field_name("value"))
        else {
            continue;
        };
        if declarator.kind() != "pointer_declarator" {
            continue;
        }
        let Some(name) = descendants(declarator).into_iter().find(|n| n.kind() == "identifier") else {
            continue;
        };
        let sources: Vec<&String> = descendants(value)
            .into_iter()
            .filter(|n| n.kind() == "identifier")
            .filter_map(|n| owner.get(syntax.text(n)))
            .collect();
        if let [one] = sources.as_slice() {
            let one = (*one).clone();
            owner.insert(syntax.text(name).to_string(), one);
        }
    }
    let mut loads: HashMap<String, Vec<Use>> = HashMap::new();
    let mut stores: HashMap<String, Vec<Use>> = HashMap::new();
    for n in nodes.iter().filter(|n| n.kind() == "identifier") {
        let Some(param) = owner.get(syntax.text(*n)) else {
            continue;
        };
        let access = access(syntax, *n);
        let loops = nodes_above(*n, body)
            .filter(|a| matches!(a.kind(), "for_statement" | "while_statement" | "do_statement" | "for_range_loop"))
            .map(|a| a.id())
            .collect();
        let use_ = Use { at: n.start_byte(), line: n.start_position().row as u32, loops };
        match access {
            Access::Load => loads.entry(param.clone()).or_default().push(use_),
            Access::Store => stores.entry(param.clone()).or_default().push(use_),
            Access::None => {}
        }
    }
    (loads, stores)
}

/// The ancestors of `node` up to (not including) `top`.
fn nodes_above<'t>(node: Node<'t>, top: Node<'t>) -> impl Iterator<Item = Node<'t>> {
    std::iter::successors(node.parent(), move |n| n.parent().filter(|_| n.id() != top.id()))
        .take_while(move |n| n.id() != top.id())
}

/// Climbs from a use of the pointer through indexing, dereference and pointer
/// arithmetic to the access, then asks what the access's parent does with it.
fn access(syntax: &Syntax, use_: Node) -> Access {
    let mut node = use_;
    let mut dereferenced = false;
    let deref = |d: bool| if d { Access::Load } else { Access::None };
    while let Some(parent) = node.parent() {
        let is_operand = parent.child_by_field_name("argument") == Some(node);
        match parent.kind() {
            "subscript_expression" | "field_expression" if is_operand => dereferenced = true,
            "pointer_expression" if syntax.text(parent).starts_with('*') => dereferenced = true,
            // `&p[i]` hands out an address again.
            "pointer_expression" => dereferenced = false,
            "parenthesized_expression" | "cast_expression" => {}
            "binary_expression" if !dereferenced => {}
            "assignment_expression" if parent.child_by_field_name("left") == Some(node) => {
                return if dereferenced { Access::Store } else { Access::None };
            }
            // `q = p`: another name for the same memory may be written through.
            "assignment_expression" => {
                return if dereferenced { Access::Load } else { Access::Store };
            }
            "update_expression" => {
                return if dereferenced { Access::Store } else { Access::None };
            }
            "argument_list" => {
                let callee = parent.parent().and_then(|c| c.child_by_field_name("function")).map(|f| syntax.text(f));
                return if dereferenced || callee.is_some_and(|c| READ_ONLY_CALLS.contains(&c)) {
                    Access::Load
                } else {
                    Access::Store
                };
            }
            _ => return deref(dereferenced),
        }
        node = parent;
    }
    deref(dereferenced)
}
