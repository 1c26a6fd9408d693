//! Scalar global loads where one thread reads contiguous elements that one
//! vector load (`LDG.E.64`/`LDG.E.128`) would fetch:
//! - neighbouring constant offsets off one base: `p[4*i+0]`, `p[4*i+1]`, …;
//! - a loop with unit step walking `p[base + k]` per thread.
//!
//! With SASS, a candidate fires only if its line really issues scalar `LDG.E`.

use super::finding;
use crate::locate::{instructions_on, listing, sass_functions};
use crate::syntax::{Syntax, descendants};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Finding, Severity};
use kernelpro_sass::disasm::Instruction;
use kernelpro_source::{Function, span_of};
use std::collections::{BTreeMap, HashSet};
use tree_sitter::Node;

pub struct ScalarLoads;

const NAME: &str = "ScalarLoads";

/// Scalar element types a thread could load several of at once, with their size in bytes.
fn element_bytes(base: &str) -> Option<u32> {
    match base {
        "float" | "int" | "unsigned" | "unsigned int" | "uint32_t" | "int32_t" => Some(4),
        "double" | "long long" | "int64_t" | "uint64_t" => Some(8),
        _ => None,
    }
}

fn is_scalar_global_load(instruction: &Instruction) -> bool {
    instruction.base_opcode() == "LDG"
        && !instruction.opcode.contains(".64")
        && !instruction.opcode.contains(".128")
}

/// One candidate: the load to underline, what it does and the vector width that would do.
struct Candidate<'t> {
    load: Node<'t>,
    message: String,
    guidance: String,
}

impl StaticTool for ScalarLoads {
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
            let loads = global_loads(&syntax, kernel, body);
            let mut candidates = neighbouring_offsets(&syntax, &loads);
            candidates.extend(unit_stride_loops(&syntax, &loads, body));
            let sass = input.sass.map(|s| sass_functions(s, &kernel.name));
            let mut seen_lines = HashSet::new();
            for c in candidates {
                let line = c.load.start_position().row as u32 + 1;
                if !seen_lines.insert(line) {
                    continue;
                }
                let mut f = finding(
                    NAME,
                    Severity::Information,
                    span_of(c.load),
                    &kernel.name,
                    c.message,
                )
                .with_guidance(c.guidance);
                if let Some(functions) = &sass {
                    let lds: Vec<&Instruction> = instructions_on(functions, input.path, line)
                        .into_iter()
                        .filter(|i| i.base_opcode() == "LDG")
                        .collect();
                    let scalar: Vec<&Instruction> = lds
                        .iter()
                        .copied()
                        .filter(|i| is_scalar_global_load(i))
                        .collect();
                    if scalar.is_empty() {
                        continue;
                    }
                    f = f
                        .with_evidence("sass", listing(&scalar, 6))
                        .with_evidence("scalar LDG on line", scalar.len());
                }
                findings.push(f);
            }
        }
        findings
    }
}

/// A load `p[index]` from a pointer parameter, with the element size.
struct Load<'t> {
    pointer: String,
    bytes: u32,
    access: Node<'t>,
    index: Node<'t>,
}

/// Subscripts of scalar pointer parameters that are read, not written.
fn global_loads<'t>(syntax: &Syntax, kernel: &Function, body: Node<'t>) -> Vec<Load<'t>> {
    descendants(body)
        .into_iter()
        .filter(|n| n.kind() == "subscript_expression")
        .filter_map(|access| {
            let pointer = syntax.text(access.child_by_field_name("argument")?);
            let param = kernel
                .params
                .iter()
                .find(|p| p.pointer && p.name == pointer)?;
            let bytes = element_bytes(&param.base)?;
            let written = access.parent().is_some_and(|p| {
                (p.kind() == "assignment_expression"
                    && p.child_by_field_name("left") == Some(access))
                    || p.kind() == "update_expression"
            });
            let index = access.child_by_field_name("indices")?.named_child(0)?;
            (!written).then(|| Load {
                pointer: pointer.to_string(),
                bytes,
                access,
                index,
            })
        })
        .collect()
}

/// `index` as `base + constant` (a bare index has offset 0).
fn split_offset<'a>(syntax: &Syntax<'a>, index: Node) -> (String, i64) {
    let squash = |n: Node| syntax.text(n).split_whitespace().collect::<String>();
    if index.kind() == "binary_expression"
        && syntax.operator(index) == Some("+")
        && let (Some(l), Some(r)) = (
            index.child_by_field_name("left"),
            index.child_by_field_name("right"),
        )
        && let Some(c) = syntax.eval(r, &Default::default())
    {
        return (squash(l), c);
    }
    (squash(index), 0)
}

/// Loads of one pointer at `base + 0`, `base + 1`, … in the same kernel.
fn neighbouring_offsets<'t>(syntax: &Syntax, loads: &[Load<'t>]) -> Vec<Candidate<'t>> {
    let mut groups: BTreeMap<(String, String), Vec<(i64, &Load<'t>)>> = BTreeMap::new();
    for load in loads {
        let (base, offset) = split_offset(syntax, load.index);
        groups
            .entry((load.pointer.clone(), base))
            .or_default()
            .push((offset, load));
    }
    let mut candidates = Vec::new();
    for ((pointer, _), mut group) in groups {
        group.sort_by_key(|(offset, load)| (*offset, load.access.start_byte()));
        group.dedup_by_key(|(offset, _)| *offset);
        let run = group
            .windows(2)
            .take_while(|w| w[1].0 == w[0].0 + 1)
            .count()
            + 1;
        if run < 2 {
            continue;
        }
        let (first, last) = (group[0].1, group[run - 1].1);
        let width = if run >= 4 { 4 } else { 2 };
        let vector_bits = width as u32 * first.bytes * 8;
        candidates.push(Candidate {
            load: first.access,
            message: format!(
                "{run} scalar loads of neighbouring elements of `{pointer}` (`{}` … `{}`) where {} would do",
                syntax.text(first.access),
                syntax.text(last.access),
                if vector_bits <= 128 { format!("{} {vector_bits}-bit load", run / width) } else { "wider loads".to_string() }
            ),
            guidance: format!(
                "Load {width} elements at once through a vector type, e.g. `reinterpret_cast<const {}{width}*>({pointer})[i]` (the address must be {}-byte aligned).",
                if first.bytes == 8 { "double" } else { "float" },
                width as u32 * first.bytes
            ),
        });
    }
    candidates
}

/// Loads `p[base + k]` inside `for (…; …; ++k)` where `base` does not depend on `k`
/// and is not itself `threadIdx.x`-contiguous (that access is already coalesced).
fn unit_stride_loops<'t>(
    syntax: &Syntax,
    loads: &[Load<'t>],
    body: Node<'t>,
) -> Vec<Candidate<'t>> {
    let tainted_x = syntax.thread_dependent(body, &["x"]);
    let mut candidates = Vec::new();
    for looped in descendants(body)
        .into_iter()
        .filter(|n| n.kind() == "for_statement")
    {
        let Some(var) = unit_step_variable(syntax, looped) else {
            continue;
        };
        let Some(loop_body) = looped.child_by_field_name("body") else {
            continue;
        };
        let inside = |n: Node| {
            loop_body.start_byte() <= n.start_byte() && n.end_byte() <= loop_body.end_byte()
        };
        for load in loads.iter().filter(|l| inside(l.access)) {
            let Some(base) = additive_rest(syntax, load.index, &var) else {
                continue;
            };
            let mentions_var = |n: Node| {
                descendants(n)
                    .into_iter()
                    .any(|d| d.kind() == "identifier" && syntax.text(d) == var)
            };
            if base.is_some_and(|b| {
                mentions_var(b)
                    || syntax.thread_stride(b, &tainted_x, &Default::default()) == Some(1)
            }) {
                continue;
            }
            candidates.push(Candidate {
                load: load.access,
                message: format!(
                    "each thread reads `{}` one element per iteration of `{var}`: contiguous scalar loads a vector load would cover",
                    syntax.text(load.access)
                ),
                guidance: format!(
                    "Step `{var}` by 4 and load a `float4` (`reinterpret_cast<const float4*>(&{})`) when the row length is a multiple of 4 and the base 16-byte aligned, or stage the rows through shared memory.",
                    syntax.text(load.access)
                ),
            });
        }
    }
    candidates
}

/// The loop variable of `for (…; …; ++k)` / `k++` / `k += 1`.
fn unit_step_variable(syntax: &Syntax, looped: Node) -> Option<String> {
    let update = looped.child_by_field_name("update")?;
    let target = match update.kind() {
        "update_expression" if syntax.text(update).contains("++") => {
            update.child_by_field_name("argument")?
        }
        "assignment_expression"
            if syntax.operator(update) == Some("+=")
                && syntax.text(update.child_by_field_name("right")?) == "1" =>
        {
            update.child_by_field_name("left")?
        }
        _ => return None,
    };
    (target.kind() == "identifier").then(|| syntax.text(target).to_string())
}

/// For `index` = `base + var` or `var + base` (or just `var`): `Some(base)`, `Some(None)` for bare `var`.
fn additive_rest<'t>(syntax: &Syntax, index: Node<'t>, var: &str) -> Option<Option<Node<'t>>> {
    if index.kind() == "identifier" && syntax.text(index) == var {
        return Some(None);
    }
    if index.kind() != "binary_expression" || syntax.operator(index) != Some("+") {
        return None;
    }
    let (l, r) = (
        index.child_by_field_name("left")?,
        index.child_by_field_name("right")?,
    );
    let is_var = |n: Node| n.kind() == "identifier" && syntax.text(n) == var;
    match (is_var(l), is_var(r)) {
        (false, true) => Some(Some(l)),
        (true, false) => Some(Some(r)),
        _ => None,
    }
}
