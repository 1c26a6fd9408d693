//! Register spills and local memory: ptxas spill bytes and stack frame for the
//! kernel, and the source lines whose SASS touches local memory (`LDL`/`STL`).
//! Spills are a warning; a stack frame without spills is information. Each
//! line says its cause when the source shows it: `printf` (its argument
//! buffer is on the stack), a `volatile` local, a math call's slow path, a
//! per-thread array indexed at run time.

use super::{finding, line_span};
use crate::locate::{lines_with, listing, sass_functions, short_name};
use crate::syntax::{Syntax, descendants};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_sass::disasm::Instruction;
use kernelpro_source::Function;

pub struct LocalMemorySpill {
    /// At most this many source lines are named per kernel, the busiest first.
    pub max_lines: usize,
}

const NAME: Code = Code::LocalMemorySpill;

fn is_local(instruction: &Instruction) -> bool {
    matches!(instruction.base_opcode(), "LDL" | "STL")
}

impl StaticTool for LocalMemorySpill {
    fn needs(&self) -> crate::Needs {
        crate::Needs::Sass
    }
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        // Parsed only once a kernel has local-memory lines to explain.
        let syntax = std::cell::OnceCell::new();
        let mut findings = Vec::new();
        for kernel in input.source.kernels() {
            // The instantiation that spills most (or has the largest stack).
            let resources = input
                .resources
                .iter()
                .filter(|r| {
                    r.entry && short_name(&r.name) == kernel.name && (r.arch.is_empty() || r.arch == input.arch)
                })
                .max_by_key(|r| (r.spill_stores + r.spill_loads, r.stack_frame));
            let mut lines: Vec<(u32, Vec<&Instruction>)> = input
                .sass
                .map(|sass| {
                    sass_functions(sass, &kernel.name)
                        .into_iter()
                        .flat_map(|f| lines_with(f, input.path, is_local))
                        .collect()
                })
                .unwrap_or_default();
            let spills = resources.is_some_and(|r| r.spills());
            let stack = resources.map_or(0, |r| r.stack_frame);
            if !spills && stack == 0 && lines.is_empty() {
                continue;
            }
            let severity = if spills { Severity::Warning } else { Severity::Information };
            let local_ops: usize = lines.iter().map(|(_, i)| i.len()).sum();
            let mut summary = match resources {
                Some(r) if spills => finding(
                    NAME,
                    severity,
                    kernel.name_span,
                    &kernel.name,
                    format!(
                        "`{}` spills registers to local memory: {} B stored, {} B loaded, {} B stack at {} registers",
                        kernel.name, r.spill_stores, r.spill_loads, r.stack_frame, r.registers
                    ),
                ),
                _ => finding(
                    NAME,
                    severity,
                    kernel.name_span,
                    &kernel.name,
                    format!("`{}` uses local memory ({stack} B stack frame) without register spills", kernel.name),
                ),
            };
            if let Some(r) = resources {
                summary = summary
                    .with_evidence("registers", r.registers)
                    .with_evidence("spill stores (B)", r.spill_stores)
                    .with_evidence("spill loads (B)", r.spill_loads)
                    .with_evidence("stack frame (B)", r.stack_frame);
            }
            let causes: Vec<(u32, Option<Cause>)> = lines
                .iter()
                .map(|(line, _)| {
                    (
                        *line,
                        syntax
                            .get_or_init(|| Syntax::parse(input.text))
                            .as_ref()
                            .and_then(|s| cause_on_line(s, input.source, line - 1))
                            // With spills, arrays and math are spilled like the rest: only say what spills cannot explain.
                            .filter(|c| !spills || matches!(c, Cause::Printf | Cause::Volatile(_))),
                    )
                })
                .collect();
            let guidance = match causes.iter().find_map(|(_, c)| c.as_ref()) {
                Some(cause) if !spills => cause.guidance(),
                _ => guidance(syntax.get_or_init(|| Syntax::parse(input.text)).as_ref(), kernel, spills),
            };
            findings.push(summary.with_evidence("LDL/STL instructions", local_ops).with_guidance(guidance.clone()));

            // The busiest lines, reported in source order.
            lines.sort_by_key(|(line, hits)| (std::cmp::Reverse(hits.len()), *line));
            lines.truncate(self.max_lines);
            lines.sort_by_key(|(line, _)| *line);
            for (line, hits) in lines {
                let cause = causes.iter().find(|(l, _)| *l == line).and_then(|(_, c)| c.as_ref());
                let why = cause.map(|c| format!(": {}", c.message())).unwrap_or_default();
                findings.push(
                    finding(
                        NAME,
                        severity,
                        line_span(input.text, line - 1),
                        &kernel.name,
                        format!(
                            "{} local-memory accesses (LDL/STL) from this line in `{}`{why}",
                            hits.len(),
                            kernel.name
                        ),
                    )
                    .with_evidence("sass", listing(&hits, 6))
                    .with_guidance(cause.map_or_else(|| guidance.clone(), Cause::guidance)),
                );
            }
        }
        findings
    }
}

/// What on a line puts data in local memory, when the source shows it.
enum Cause {
    Printf,
    Volatile(String),
    MathSlowPath(String),
    IndexedArray(String),
}

/// Math calls whose argument reduction (large arguments) works on a local array.
const SLOW_PATH_MATH: &[&str] = &["sinf", "cosf", "tanf", "sincosf", "sin", "cos", "tan", "sincos", "powf", "pow"];

impl Cause {
    fn message(&self) -> String {
        match self {
            Cause::Printf => {
                "`printf` stores its arguments to a buffer in local memory (the stack) for `vprintf`".into()
            }
            Cause::Volatile(v) => {
                format!("`{v}` is `volatile`, so it lives in local memory and every access goes there")
            }
            Cause::MathSlowPath(f) => {
                format!("`{f}`'s slow path for large arguments (range reduction) keeps a local array")
            }
            Cause::IndexedArray(a) => {
                format!("the per-thread array `{a}` is indexed at run time, so it lives in local memory")
            }
        }
    }
    fn guidance(&self) -> String {
        match self {
            Cause::Printf => "Keep `printf` out of hot kernels (guard it with a debug macro); its stack traffic and the call itself are slow.".into(),
            Cause::Volatile(v) => format!("Drop `volatile` from `{v}` unless another thread really changes it; for shared flags use `cuda::atomic_ref` or `__threadfence`."),
            Cause::MathSlowPath(f) => format!("Use the fast intrinsic (`__{}`) when arguments are small, or keep them in range so the slow path is not taken.", f.trim_end_matches('f').to_string() + "f"),
            Cause::IndexedArray(a) => format!("Index `{a}` with compile-time constants (fully unrolled loops, `#pragma unroll`) so it stays in registers, or move it to shared memory."),
        }
    }
}

/// The cause on a 0-based line, by priority: printf, volatile, math call, indexed array.
fn cause_on_line(syntax: &Syntax, source: &kernelpro_source::SourceFile, line: u32) -> Option<Cause> {
    let body = source.function_at_line(line).and_then(|f| syntax.body(f))?;
    let nodes = descendants(body);
    let on_line: Vec<_> = nodes.iter().filter(|n| n.start_position().row as u32 == line).collect();
    let callee = |n: &tree_sitter::Node| {
        (n.kind() == "call_expression").then(|| n.child_by_field_name("function")).flatten().map(|f| syntax.text(f))
    };
    if on_line.iter().any(|n| callee(n).is_some_and(|c| c == "printf")) {
        return Some(Cause::Printf);
    }
    let volatile: Vec<&str> = nodes
        .iter()
        .filter(|d| d.kind() == "declaration" && syntax.text(**d).split_whitespace().any(|w| w == "volatile"))
        .flat_map(|d| descendants(*d).into_iter().filter(|n| n.kind() == "identifier").map(|n| syntax.text(n)).take(1))
        .collect();
    if let Some(v) = on_line.iter().find(|n| n.kind() == "identifier" && volatile.contains(&syntax.text(***n))) {
        return Some(Cause::Volatile(syntax.text(**v).to_string()));
    }
    if let Some(f) = on_line.iter().filter_map(|n| callee(n)).find(|c| SLOW_PATH_MATH.contains(c)) {
        return Some(Cause::MathSlowPath(f.to_string()));
    }
    let arrays: Vec<&str> = nodes
        .iter()
        .filter(|n| n.kind() == "array_declarator")
        .filter(|n| !n.parent().is_some_and(|d| syntax.text(d).contains("__shared__")))
        .filter_map(|n| n.child_by_field_name("declarator").map(|d| syntax.text(d)))
        .collect();
    on_line
        .iter()
        .filter(|n| n.kind() == "subscript_expression")
        .find(|n| n.child_by_field_name("argument").is_some_and(|a| arrays.contains(&syntax.text(a))))
        .and_then(|n| n.child_by_field_name("argument"))
        .map(|a| Cause::IndexedArray(syntax.text(a).to_string()))
}

fn guidance(syntax: Option<&Syntax>, kernel: &Function, spills: bool) -> String {
    if !spills {
        return "Local memory without spills comes from a per-thread array indexed at run time or a math slow path \
                (sinf/cosf range reduction of large arguments): index arrays with compile-time constants \
                (#pragma unroll), or use __sinf/__cosf when arguments are small."
            .to_string();
    }
    let cap = syntax
        .and_then(|s| Some(s.text[kernelpro_source::launch::bounds(&s.tree, kernel)?.attribute.bytes].to_string()));
    let relax = match cap {
        Some(bounds) => {
            format!("relax `{bounds}` (fewer minimum blocks per SM allows more registers)")
        }
        None => "check -maxrregcount".to_string(),
    };
    format!(
        "Reduce live values per thread (smaller per-thread arrays, less unrolling, recompute instead of keeping), or {relax}."
    )
}
