//! Register spills and local memory: ptxas spill bytes and stack frame for the
//! kernel, and the source lines whose SASS touches local memory (`LDL`/`STL`).
//! Spills are a warning; a stack frame without spills (a run-time indexed
//! local array, a math slow path) is information.

use super::{finding, line_span};
use crate::locate::{lines_with, listing, sass_functions, short_name};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Finding, Severity};
use kernelpro_sass::disasm::Instruction;
use kernelpro_source::Function;

pub struct LocalMemorySpill {
    /// At most this many source lines are named per kernel, the busiest first.
    pub max_lines: usize,
}

const NAME: &str = "LocalMemorySpill";

fn is_local(instruction: &Instruction) -> bool {
    matches!(instruction.base_opcode(), "LDL" | "STL")
}

impl StaticTool for LocalMemorySpill {
    fn name(&self) -> &'static str {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let mut findings = Vec::new();
        for kernel in input.source.kernels() {
            let resources = input.resources.iter().find(|r| {
                r.entry
                    && short_name(&r.name) == kernel.name
                    && (r.arch.is_empty() || r.arch == input.arch)
            });
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
            let severity = if spills {
                Severity::Warning
            } else {
                Severity::Information
            };
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
                    format!(
                        "`{}` uses local memory ({stack} B stack frame) without register spills",
                        kernel.name
                    ),
                ),
            };
            if let Some(r) = resources {
                summary = summary
                    .with_evidence("registers", r.registers)
                    .with_evidence("spill stores (B)", r.spill_stores)
                    .with_evidence("spill loads (B)", r.spill_loads)
                    .with_evidence("stack frame (B)", r.stack_frame);
            }
            let guidance = guidance(input.text, kernel, spills);
            findings.push(
                summary
                    .with_evidence("LDL/STL instructions", local_ops)
                    .with_guidance(guidance.clone()),
            );

            // The busiest lines, reported in source order.
            lines.sort_by_key(|(line, hits)| (std::cmp::Reverse(hits.len()), *line));
            lines.truncate(self.max_lines);
            lines.sort_by_key(|(line, _)| *line);
            for (line, hits) in lines {
                findings.push(
                    finding(
                        NAME,
                        severity,
                        line_span(input.text, line - 1),
                        &kernel.name,
                        format!(
                            "{} local-memory accesses (LDL/STL) from this line in `{}`",
                            hits.len(),
                            kernel.name
                        ),
                    )
                    .with_evidence("sass", listing(&hits, 6))
                    .with_guidance(guidance.clone()),
                );
            }
        }
        findings
    }
}

fn guidance(text: &str, kernel: &Function, spills: bool) -> String {
    if !spills {
        return "Local memory without spills comes from a per-thread array indexed at run time or a math slow path \
                (sinf/cosf range reduction of large arguments): index arrays with compile-time constants \
                (#pragma unroll), or use __sinf/__cosf when arguments are small."
            .to_string();
    }
    let head =
        &text[kernel.start_byte..kernel.body_bytes.map_or(kernel.end_byte, |(body, _)| body)];
    let cap = head.find("__launch_bounds__").map(|at| {
        let rest = &head[at..];
        rest[..rest.find(')').map_or(rest.len(), |e| e + 1)].to_string()
    });
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
