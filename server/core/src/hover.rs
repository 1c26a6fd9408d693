//! Hover text (Markdown) for a position: a kernel's resources on its name,
//! the SASS of a source line elsewhere, with what each opcode does and costs.

use crate::analysis::{FileAnalysis, bytes, limiter_name};
use kernelpro_model::Pos;
use kernelpro_sass::disasm::Instruction;
use kernelpro_sass::opcodes;
use std::collections::BTreeSet;

/// At most this many instructions per kernel are listed; the rest are counted.
const MAX_INSTRUCTIONS: usize = 16;

pub fn hover_markdown(analysis: &FileAnalysis, pos: Pos) -> Option<String> {
    if let Some(k) = analysis.source.kernels().find(|k| k.name_span.start.line == pos.line && k.name_span.start.col <= pos.col && pos.col <= k.name_span.end.col) {
        return kernel_hover(analysis, &k.name);
    }
    line_hover(analysis, pos.line)
}

pub fn kernel_hover(a: &FileAnalysis, kernel: &str) -> Option<String> {
    let mut s = format!("**{kernel}** · `__global__` · {}\n\n", a.arch);
    let Some(r) = a.resources(kernel) else {
        s.push_str("Save the file to compile it and see its resources.");
        return Some(s);
    };
    s.push_str(&format!(
        "| registers | stack | spill stores / loads | shared (static) | barriers |\n|---|---|---|---|---|\n| {} | {} | {} / {} | {} | {} |\n",
        r.registers,
        bytes(r.stack_frame),
        bytes(r.spill_stores),
        bytes(r.spill_loads),
        bytes(r.shared_static),
        r.barriers
    ));
    if let Some(o) = a.occupancy(kernel) {
        s.push_str(&format!(
            "\nTheoretical occupancy at {} threads/block: **{:.0}%** ({} of {} warps, {} blocks/SM), limited by **{}**.\n",
            a.block_size(kernel),
            o.percent,
            o.active_warps,
            o.max_warps,
            o.blocks_per_sm,
            limiter_name(o.limiter)
        ));
    }
    Some(s)
}

pub fn line_hover(a: &FileAnalysis, line: u32) -> Option<String> {
    let dis = a.disassembly()?;
    let path = a.path.display().to_string();
    let mut s = String::new();
    let mut seen = BTreeSet::new();
    for f in &dis.functions {
        let idx = f.instructions_at(&path, line + 1);
        if idx.is_empty() {
            continue;
        }
        s.push_str(&format!("SASS of line {} in `{}` ({} instructions)\n```sass\n", line + 1, f.name, idx.len()));
        for &i in idx.iter().take(MAX_INSTRUCTIONS) {
            let ins = &f.instructions[i];
            s.push_str(&instruction_line(ins));
            s.push('\n');
            seen.insert(ins.opcode.clone());
        }
        if idx.len() > MAX_INSTRUCTIONS {
            s.push_str(&format!("// … and {} more\n", idx.len() - MAX_INSTRUCTIONS));
        }
        s.push_str("```\n");
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

fn instruction_line(ins: &Instruction) -> String {
    let pred = ins.predicate.as_ref().map(|p| format!("@{p} ")).unwrap_or_default();
    let mut l = format!("/*{:04x}*/ {pred}{} {};", ins.offset, ins.opcode, ins.operands);
    if let Some(c) = &ins.control {
        l = format!("{l:<56} // {}", c.describe());
    }
    l
}
