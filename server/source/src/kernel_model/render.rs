//! The model as compact text, one fact a line (1-based lines): what the unit
//! tests snapshot and what a debugging user can read.

use super::{AccessKind, BranchKind, KernelModel, LaunchSource, Space, Step};
use std::fmt::Write;

pub fn render(m: &KernelModel) -> String {
    let mut out = String::new();
    let launch = match (m.launch.block, m.launch.source) {
        (Some([x, y, z]), Some(s)) => {
            format!(" block=({x},{y},{z}) from {}", if s == LaunchSource::Spec { "spec" } else { "launch site" })
        }
        _ => " block=?".to_string(),
    };
    let bounds = m.launch.max_threads.map(|t| format!(" launch_bounds={t}")).unwrap_or_default();
    let _ = writeln!(out, "{} {}{launch}{bounds}", if m.is_kernel { "kernel" } else { "device fn" }, m.name);
    if let Some(p) = m.pattern() {
        let _ = writeln!(out, "  pattern {}: {}", p.pattern.name(), p.because);
    }
    for (name, value) in &m.thread_values {
        let _ = writeln!(out, "  let {name} = {value}");
    }
    for s in &m.shared {
        let _ = writeln!(out, "  shared {} {}{}", s.elem.name, s.name, dims(&s.dims));
    }
    for a in &m.local_arrays {
        let _ = writeln!(out, "  local {} {}{}", a.elem.name, a.name, dims(&a.dims));
    }
    for (i, l) in m.loops.iter().enumerate() {
        let step = match &l.step {
            Step::Add(s) => format!("+= {s}"),
            Step::Scale(s) => s.clone(),
            Step::Unknown => "?".into(),
        };
        let var = l.var.as_deref().unwrap_or("?");
        let init = l.init.as_ref().map(|p| p.to_string()).unwrap_or_else(|| "?".into());
        let bound = l.bound.as_ref().map(|p| p.to_string()).unwrap_or_else(|| "?".into());
        let kind = if l.grid_stride {
            " grid-stride"
        } else if l.block_stride {
            " block-stride"
        } else {
            ""
        };
        let parent = l.parent.map(|p| format!(" in loop{p}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "  loop{i} L{} {var}: init {init}, bound {bound}, step {step}{kind}{parent}",
            l.span.start.line + 1
        );
    }
    for (i, b) in m.branches.iter().enumerate() {
        if b.kind == BranchKind::Uniform && b.source == super::BranchSource::Loop {
            continue;
        }
        let kind = match &b.kind {
            BranchKind::LaneModulo { modulus } => format!("lane modulo {modulus}"),
            k => format!("{k:?}").to_lowercase(),
        };
        let _ = writeln!(out, "  branch{i} L{} {:?} `{}`: {kind}", b.span.start.line + 1, b.source, b.condition);
    }
    for a in &m.accesses {
        let space = match a.space {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Local => "local",
        };
        let kind = match &a.kind {
            AccessKind::Read => "read".to_string(),
            AccessKind::Write => "write".to_string(),
            AccessKind::ReadWrite => "read-write".to_string(),
            AccessKind::Atomic(f) => f.clone(),
        };
        let size = a.elem.bytes.map(|b| format!("{b}B")).unwrap_or_else(|| "?B".into());
        let lane = a.lane_coefficient();
        let form = if a.is_irregular() {
            " irregular".to_string()
        } else if !a.index.is_affine() {
            " non-affine".to_string()
        } else {
            format!(" lane*{lane}")
        };
        let loops: Vec<String> = a.loops.iter().map(|l| format!("loop{l}")).collect();
        let loops = if loops.is_empty() { String::new() } else { format!(" in {}", loops.join(",")) };
        let product = match (a.in_product, a.accumulated) {
            (true, true) => " product accumulated",
            (true, false) => " product",
            (false, true) => " accumulated",
            _ => "",
        };
        let _ = writeln!(
            out,
            "  L{} {space} {kind} {}[{}] {} {size}{form}{loops}{product}",
            a.line() + 1,
            a.base,
            a.index,
            a.elem.name
        );
    }
    for b in &m.barriers {
        let under: Vec<String> =
            b.branches.iter().filter(|&&i| m.branches[i].kind.splits_block()).map(|i| format!("branch{i}")).collect();
        let under = if under.is_empty() { String::new() } else { format!(" under {}", under.join(",")) };
        let _ = writeln!(out, "  barrier L{} {}{under}", b.span.start.line + 1, b.text);
    }
    out
}

fn dims(d: &[Option<i64>]) -> String {
    d.iter().map(|x| x.map(|v| format!("[{v}]")).unwrap_or_else(|| "[]".into())).collect()
}
