//! Shared-memory bank conflicts visible in the index expression. Shared memory
//! has 32 banks of 4-byte words, so neighbouring threads conflict when their
//! addresses are a multiple of 32 words apart:
//! - `tile[tx][k]` on a `[N][M]` array whose row is a multiple of 32 words
//!   (column access: `threadIdx.x` in the first, slow index);
//! - `buf[tx * S + k]` with `S` words a multiple of 32.

use super::finding;
use crate::locate::{instructions_on, listing, sass_functions};
use crate::syntax::{Syntax, descendants};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Finding, Severity};
use kernelpro_source::span_of;
use std::collections::HashMap;
use tree_sitter::Node;

pub struct SharedBankConflict;

const NAME: &str = "SharedBankConflict";

/// A `__shared__` array: its name, 4-byte words per element and dimensions.
#[derive(Clone)]
struct SharedArray {
    name: String,
    element: String,
    words: i64,
    dims: Vec<i64>,
}

impl StaticTool for SharedBankConflict {
    fn name(&self) -> &'static str {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let Some(syntax) = Syntax::parse(input.text) else {
            return Vec::new();
        };
        let constants = syntax.constants();
        let global_arrays = shared_arrays(&syntax, syntax.tree.root_node(), &constants, false);
        let mut findings = Vec::new();
        for (function, body) in syntax.device_bodies(input.source) {
            let tainted = syntax.thread_dependent(body, &["x"]);
            let mut arrays = shared_arrays(&syntax, body, &constants, true);
            arrays.extend(global_arrays.iter().cloned());
            for access in descendants(body)
                .into_iter()
                .filter(|n| is_outer_subscript(*n))
            {
                let (base, indices) = subscript_chain(access);
                let Some(array) = arrays.iter().find(|a| syntax.text(base) == a.name) else {
                    continue;
                };
                let Some(conflict) = conflict(&syntax, array, &indices, &tainted, &constants)
                else {
                    continue;
                };
                let line = access.start_position().row as u32 + 1;
                let sass: Vec<_> = input
                    .sass
                    .map(|s| instructions_on(&sass_functions(s, &function.name), input.path, line))
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|i| matches!(i.base_opcode(), "LDS" | "STS"))
                    .collect();
                let mut f = finding(
                    NAME,
                    Severity::Warning,
                    span_of(access),
                    &function.name,
                    format!("`{}`: {}", syntax.text(access), conflict.0),
                )
                .with_evidence(
                    "shared array",
                    format!(
                        "__shared__ {} {}{}",
                        array.element,
                        array.name,
                        array
                            .dims
                            .iter()
                            .map(|d| format!("[{d}]"))
                            .collect::<String>()
                    ),
                )
                .with_evidence("stride between threads (words)", conflict.1)
                .with_guidance(conflict.2);
                if !sass.is_empty() {
                    f = f.with_evidence("sass", listing(&sass, 4));
                }
                findings.push(f);
            }
        }
        findings
    }
}

/// Message, stride in words and guidance when `indices` (outermost first) conflict.
fn conflict(
    syntax: &Syntax,
    array: &SharedArray,
    indices: &[Node],
    tainted: &std::collections::HashSet<String>,
    constants: &HashMap<String, i64>,
) -> Option<(String, i64, String)> {
    let depends = |n: &Node| syntax.mentions_thread(*n, &["x"], tainted);
    if let ([first, .., last], [.., row]) = (indices, array.dims.as_slice()) {
        let row_words = row * array.words;
        let column_access = depends(first) && !depends(last) && row_words % 32 == 0;
        if !column_access {
            return None;
        }
        let mut padded: Vec<String> = array.dims.iter().map(|d| format!("[{d}]")).collect();
        if let Some(inner) = padded.last_mut() {
            *inner = format!("[{}]", row + 1);
        }
        return Some((
            format!(
                "threads of a warp read a column of `{}`, whose rows are {row_words} words apart: they share banks (up to 32-way conflicts)",
                array.name
            ),
            row_words,
            format!(
                "Pad the inner dimension by one element: `__shared__ {} {}{}`.",
                array.element,
                array.name,
                padded.concat()
            ),
        ));
    }
    let [index] = indices else { return None };
    let stride = syntax.thread_stride(*index, tainted, constants)? * array.words;
    if stride == 0 || stride % 32 != 0 {
        return None;
    }
    Some((
        format!(
            "neighbouring threads are {stride} words apart, so they all hit the same bank (32-way conflict)"
        ),
        stride,
        format!(
            "Use an odd stride (e.g. {} words: pad each thread's row by one element) or let consecutive threads read consecutive words.",
            stride / array.words * array.words + array.words
        ),
    ))
}

/// `__shared__` array declarations directly in `scope` (file scope when `nested` is false).
fn shared_arrays(
    syntax: &Syntax,
    scope: Node,
    constants: &HashMap<String, i64>,
    nested: bool,
) -> Vec<SharedArray> {
    let declarations = if nested {
        descendants(scope)
    } else {
        (0..scope.named_child_count())
            .filter_map(|i| scope.named_child(i))
            .collect()
    };
    let mut arrays = Vec::new();
    for declaration in declarations
        .into_iter()
        .filter(|n| n.kind() == "declaration")
    {
        let shared = (0..declaration.child_count())
            .filter_map(|i| declaration.child(i))
            .any(|c| syntax.text(c) == "__shared__");
        let Some(ty) = declaration.child_by_field_name("type") else {
            continue;
        };
        let Some(words) = element_words(syntax.text(ty)) else {
            continue;
        };
        if !shared {
            continue;
        }
        let mut cursor = declaration.walk();
        for declarator in declaration.children_by_field_name("declarator", &mut cursor) {
            let mut dims = Vec::new();
            let mut node = declarator;
            while node.kind() == "array_declarator" {
                dims.push(
                    node.child_by_field_name("size")
                        .and_then(|s| syntax.eval(s, constants)),
                );
                let Some(inner) = node.child_by_field_name("declarator") else {
                    break;
                };
                node = inner;
            }
            // Array declarators nest outermost-last: `t[A][B]` is (t[A])[B].
            dims.reverse();
            if node.kind() == "identifier"
                && !dims.is_empty()
                && let Some(dims) = dims.into_iter().collect::<Option<Vec<i64>>>()
            {
                arrays.push(SharedArray {
                    name: syntax.text(node).to_string(),
                    element: syntax.text(ty).to_string(),
                    words,
                    dims,
                });
            }
        }
    }
    arrays
}

/// 4-byte words per element; sub-word types (half, char) are left out.
fn element_words(ty: &str) -> Option<i64> {
    match ty {
        "float" | "int" | "unsigned" | "unsigned int" | "uint32_t" | "int32_t" => Some(1),
        "double" | "long long" | "unsigned long long" | "int64_t" | "uint64_t" | "float2"
        | "int2" => Some(2),
        "float4" | "int4" | "double2" => Some(4),
        _ => None,
    }
}

fn is_outer_subscript(node: Node) -> bool {
    node.kind() == "subscript_expression"
        && !node.parent().is_some_and(|p| {
            p.kind() == "subscript_expression" && p.child_by_field_name("argument") == Some(node)
        })
}

/// `t[a][b]` → (`t`, [a, b]).
fn subscript_chain(access: Node) -> (Node, Vec<Node>) {
    let mut indices = Vec::new();
    let mut node = access;
    while node.kind() == "subscript_expression" {
        if let Some(index) = node
            .child_by_field_name("indices")
            .and_then(|l| l.named_child(0))
        {
            indices.push(index);
        }
        let Some(inner) = node.child_by_field_name("argument") else {
            break;
        };
        node = inner;
    }
    indices.reverse();
    (node, indices)
}
