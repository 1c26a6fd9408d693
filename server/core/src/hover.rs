//! Hover text (Markdown) for a position: a kernel's resources on its name
//! (one row per template instantiation), the SASS of a source line elsewhere:
//! a per-line summary, the costly instructions first, capped, with what each
//! opcode does and costs. The full listing is [`sass_listing`] (the Show SASS
//! command, `kernelpro check --sass LINE`).

use crate::analysis::{FileAnalysis, bytes, limiter_name};
use kernelpro_model::Pos;
use kernelpro_sass::cost::{CostClass, classify};
use kernelpro_sass::disasm::{Function, Instruction};
use kernelpro_sass::opcodes;
use std::collections::{BTreeMap, BTreeSet};

/// At most this many instructions per kernel are listed in a hover; the rest are counted.
const MAX_INSTRUCTIONS: usize = 16;

/// The hover at `pos` of the analysed text; `shown_line` is where that line
/// is in the editor now (unsaved edits move lines), for the titles.
pub fn hover_markdown(analysis: &FileAnalysis, pos: Pos, shown_line: u32) -> Option<String> {
    if let Some(k) = analysis.source.kernels().find(|k| {
        k.name_span.start.line == pos.line && k.name_span.start.col <= pos.col && pos.col <= k.name_span.end.col
    }) {
        return kernel_hover(analysis, &k.name);
    }
    line_hover(analysis, pos.line, shown_line)
}

pub fn kernel_hover(a: &FileAnalysis, kernel: &str) -> Option<String> {
    let mut s = format!("**{kernel}** · `__global__` · {}\n\n", a.arch);
    let all = a.instantiations(kernel);
    if all.is_empty() {
        s.push_str(&not_compiled(a, kernel));
        return Some(s);
    }
    let launch = a.launch(kernel);
    let several = all.len() > 1;
    s.push_str(if several { "| instantiation | registers | stack | spill stores / loads | shared (static) | barriers | occupancy |\n|---|---|---|---|---|---|---|\n" } else { "| registers | stack | spill stores / loads | shared (static) | barriers |\n|---|---|---|---|---|\n" });
    for r in &all {
        let row = format!(
            "{} | {} | {} / {} | {} | {}",
            r.registers,
            bytes(r.stack_frame),
            bytes(r.spill_stores),
            bytes(r.spill_loads),
            bytes(r.shared_static),
            r.barriers
        );
        if several {
            let occ = a
                .occupancy_of(kernel, r)
                .map_or("—".to_string(), |o| format!("{:.0}% ({})", o.percent, limiter_name(o.limiter)));
            s.push_str(&format!("| `{}` | {row} | {occ} |\n", r.name));
        } else {
            s.push_str(&format!("| {row} |\n"));
        }
    }
    let dynamic = match launch.smem {
        Some(0) => String::new(),
        Some(b) => format!(" and {} of dynamic shared memory", bytes(b)),
        None => " (dynamic shared memory unknown: not counted)".to_string(),
    };
    let from = launch.from.describe();
    if several {
        s.push_str(&format!("\nTheoretical occupancy at {} threads/block{dynamic}, from {from}.\n", launch.block));
    } else if let Some(o) = a.occupancy_of(kernel, all[0]) {
        s.push_str(&format!(
            "\nTheoretical occupancy at {} threads/block{dynamic}: **{:.0}%** ({} of {} warps, {} blocks/SM), limited by **{}**. Block size from {from}.\n",
            launch.block,
            o.percent,
            o.active_warps,
            o.max_warps,
            o.blocks_per_sm,
            limiter_name(o.limiter)
        ));
    } else {
        s.push_str(&format!("\nOccupancy is not known for {}.\n", a.arch));
    }
    Some(s)
}

/// Why a kernel has no resources to show.
fn not_compiled(a: &FileAnalysis, kernel: &str) -> String {
    let template = a.source.kernel(kernel).is_some_and(|k| k.is_template);
    if let (None, Some(trust)) = (&a.compile, a.untrusted) {
        return format!(
            "Not compiled: the workspace is not trusted, so nothing is compiled or run here. To compile it and see its resources, {trust}."
        );
    }
    let why = match &a.compile {
        Some(c) if !c.ok => "The last compile failed: see the errors.",
        Some(_) if template => {
            "No instantiation of this template was compiled: launch it (`kernel<float><<<…>>>`) or instantiate it explicitly (`template __global__ void kernel<float>(…);`) in this file."
        }
        Some(_) => "ptxas reported no resources for this kernel.",
        None if a.findings.iter().any(|f| matches!(f.code.as_deref(), Some("no-nvcc" | "compile-failed"))) => {
            "Not compiled: see the message at the top of the file."
        }
        None => "Not compiled yet: save the file to compile it and see its resources.",
    };
    why.to_string()
}

/// Show SASS on a line rewritten since the last analysis (0-based `line`).
pub fn no_sass_edited(line: u32) -> String {
    format!("No SASS for line {}: it changed since the last compile; save the file to compile it.", line + 1)
}

/// Why Show SASS has nothing for `line` (0-based), in words that fit the file's state.
pub fn no_sass(a: Option<&FileAnalysis>, line: u32) -> String {
    let line = line + 1;
    match a {
        None => "No SASS yet: save the file (in a trusted workspace) to compile it.".into(),
        Some(a) => match &a.compile {
            Some(c) if !c.ok => format!("No SASS for line {line}: the last compile failed (see the errors)."),
            Some(_) => format!(
                "No SASS for line {line}: the compiler generated no instructions for it (a comment, a declaration, host code, or code optimized away)."
            ),
            None => {
                let why = not_compiled(a, "");
                format!("No SASS for line {line}: {}{}", why[..1].to_lowercase(), &why[1..])
            }
        },
    }
}

/// The hover of a source line: a summary per kernel, the costly instructions
/// first, capped. `line` is the analysed text's, `shown_line` the editor's now.
pub fn line_hover(a: &FileAnalysis, line: u32, shown_line: u32) -> Option<String> {
    sass_markdown(a, line, shown_line, Some(MAX_INSTRUCTIONS))
}

/// Every instruction of a line, in program order (the Show SASS command, `check --sass`).
pub fn sass_listing(a: &FileAnalysis, line: u32, shown_line: u32) -> Option<String> {
    sass_markdown(a, line, shown_line, None)
}

fn sass_markdown(a: &FileAnalysis, line: u32, shown_line: u32, cap: Option<usize>) -> Option<String> {
    let dis = a.disassembly()?;
    let path = a.path.display().to_string();
    let mut s = String::new();
    let mut seen = BTreeSet::new();
    for f in &dis.functions {
        let idx = f.instructions_at(&path, line + 1);
        if idx.is_empty() {
            continue;
        }
        s.push_str(&format!("SASS of line {} in `{}`: {}\n```sass\n", shown_line + 1, f.name, line_summary(f, idx)));
        let shown: Vec<usize> = match cap {
            Some(cap) => costly_first(f, idx).into_iter().take(cap).collect(),
            None => idx.to_vec(),
        };
        for &i in &shown {
            let ins = &f.instructions[i];
            s.push_str(&instruction_line(ins));
            s.push('\n');
            seen.insert(ins.opcode.clone());
        }
        if idx.len() > shown.len() {
            s.push_str(&format!("// … and {} more\n", idx.len() - shown.len()));
        }
        s.push_str("```\n");
        if idx.len() > shown.len() {
            // Where the uncapped listing is, in the words of the user's client.
            s.push_str(&format!("Costly instructions first; the full listing: {}.\n\n", a.words.full_listing));
        }
    }
    if s.is_empty() {
        return None;
    }
    for op in seen {
        if let Some(doc) = opcodes::lookup(&op) {
            s.push_str(&format!("- `{op}`: {}", doc.meaning));
            if !doc.cost.is_empty() {
                s.push_str(&format!(" — {}", doc.cost));
            }
            s.push('\n');
        }
    }
    Some(s)
}

/// `225 instructions: 48 FP64 (DFMA, DMUL, F2F), 12 global loads, 2 barriers`.
pub fn line_summary(f: &Function, idx: &[usize]) -> String {
    let mut classes: BTreeMap<CostClass, (usize, BTreeSet<&str>)> = BTreeMap::new();
    for &i in idx {
        let ins = &f.instructions[i];
        let entry = classes.entry(classify(ins)).or_default();
        entry.0 += 1;
        entry.1.insert(ins.base_opcode());
    }
    let parts: Vec<String> = classes
        .iter()
        .filter(|(c, _)| **c != CostClass::Other)
        .map(|(c, (n, ops))| {
            let named =
                matches!(c, CostClass::Fp64 | CostClass::LocalMemory | CostClass::Atomic | CostClass::Conversion);
            let ops = if named {
                format!(" ({})", ops.iter().copied().collect::<Vec<_>>().join(", "))
            } else {
                String::new()
            };
            let label = c.label();
            let label = if *n == 1 { label.strip_suffix('s').unwrap_or(label) } else { label };
            format!("{n} {label}{ops}")
        })
        .collect();
    let total = match idx.len() {
        1 => "1 instruction".to_string(),
        n => format!("{n} instructions"),
    };
    if parts.is_empty() { total } else { format!("{total}: {}", parts.join(", ")) }
}

/// The instructions of a line with the costly classes first, each group in program order.
fn costly_first(f: &Function, idx: &[usize]) -> Vec<usize> {
    let (mut costly, rest): (Vec<usize>, Vec<usize>) =
        idx.iter().partition(|&&i| classify(&f.instructions[i]).is_costly());
    costly.extend(rest);
    costly
}

fn instruction_line(ins: &Instruction) -> String {
    let pred = ins.predicate.as_ref().map(|p| format!("@{p} ")).unwrap_or_default();
    let mut l = format!("/*{:04x}*/ {pred}{} {};", ins.offset, ins.opcode, ins.operands);
    if let Some(c) = &ins.control {
        l = format!("{l:<56} // {}", c.describe());
    }
    l
}
