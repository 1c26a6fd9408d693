//! Scalar global loads that one vector load (`LDG.E.64`/`LDG.E.128`) would
//! cover, only where the warp's lanes are already contiguous as a group:
//! - reads `p[s*i + 0]`, …, `p[s*i + s-1]` of one index, whose lanes are `s`
//!   elements apart (each thread owns `s` neighbouring elements);
//! - a loop of constant trip count `s` with unit step reading `p[s*i + k]`;
//! - an elementwise map (every access `p[i]` with lanes one element apart, no
//!   loop but a grid-stride one): one element per thread, where 128-bit loads
//!   of 4 elements per thread move the same bytes with a quarter of the instructions.
//!
//! An access whose lanes are far apart (a row walk) is UncoalescedAccess's,
//! not this; atomic targets are never loads. With SASS, a candidate fires only
//! if its line really issues scalar `LDG.E`.

use super::finding;
use crate::locate::{instructions_on, listing, sass_functions};
use crate::model::{Lines, models};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_sass::disasm::Instruction;
use kernelpro_source::kernel_model::{Access, AccessKind, KernelModel, Poly, Space, Step};
use std::collections::BTreeMap;

pub struct ScalarLoads;

const NAME: Code = Code::ScalarLoads;

fn is_scalar_global_load(instruction: &Instruction) -> bool {
    instruction.base_opcode() == "LDG" && !instruction.opcode.contains(".64") && !instruction.opcode.contains(".128")
}

/// One candidate: the load to underline, what it does and the vector width that would do.
struct Candidate<'m> {
    load: &'m Access,
    /// The other loads of its statement the finding names (an elementwise map's `x[i]` and `y[i]`).
    also: Vec<&'m Access>,
    message: String,
    guidance: String,
}

impl StaticTool for ScalarLoads {
    fn needs(&self) -> crate::Needs {
        crate::Needs::Sass
    }
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut lines = Lines::default();
        for model in models(input).iter().filter(|m| m.is_kernel) {
            let mut candidates = neighbouring_offsets(model);
            candidates.extend(short_loops(model));
            candidates.extend(elementwise_map(model));
            let sass = input.sass.map(|s| sass_functions(s, &model.name));
            for c in candidates {
                let line = c.load.line() + 1;
                if !lines.first(&model.name, c.load.line()) {
                    continue;
                }
                // Every load it names on this line is underlined.
                let mut span = c.load.span;
                let line0 = span.start.line;
                for a in c.also.iter().filter(|a| a.span.start.line == line0) {
                    span.start = span.start.min(a.span.start);
                    span.end = span.end.max(a.span.end);
                }
                let mut f =
                    finding(NAME, Severity::Information, span, &model.name, c.message).with_guidance(c.guidance);
                if let Some(functions) = &sass {
                    let scalar: Vec<&Instruction> = instructions_on(functions, input.path, line)
                        .into_iter()
                        .filter(|i| is_scalar_global_load(i))
                        .collect();
                    if scalar.is_empty() {
                        continue;
                    }
                    f = f.with_evidence("sass", listing(&scalar, 6)).with_evidence("scalar LDG on line", scalar.len());
                }
                findings.push(f);
            }
        }
        findings
    }
}

/// Plain global reads of a 4- or 8-byte scalar type.
fn scalar_reads(model: &KernelModel) -> impl Iterator<Item = &Access> {
    model.accesses.iter().filter(|a| {
        a.space == Space::Global
            && a.kind == AccessKind::Read
            && matches!(a.elem.bytes, Some(4 | 8))
            && !a.elem.name.ends_with(char::is_numeric)
            && a.index.is_affine()
    })
}

fn vector_type(a: &Access, width: i64) -> String {
    let base = if a.elem.bytes == Some(8) {
        "double"
    } else if a.elem.name.starts_with("int") {
        "int"
    } else {
        "float"
    };
    format!("{base}{width}")
}

/// `p[s*i + 0]` … `p[s*i + s-1]` with lanes `s` apart.
fn neighbouring_offsets(model: &KernelModel) -> Vec<Candidate<'_>> {
    let mut groups: BTreeMap<(String, Poly), BTreeMap<i64, &Access>> = BTreeMap::new();
    for a in scalar_reads(model) {
        let c = a.index.constant_term();
        groups.entry((a.base.clone(), a.index.sub(&Poly::constant(c)))).or_default().entry(c).or_insert(a);
    }
    let mut out = Vec::new();
    for ((base, _), offsets) in groups {
        let Some((&lo, first)) = offsets.iter().next() else {
            continue;
        };
        let run = offsets.keys().zip(lo..).take_while(|(k, want)| **k == *want).count() as i64;
        let lane = first.lane_coefficient().as_constant();
        // Lanes must be exactly one run apart: together the warp reads a contiguous range.
        if run < 2 || lane != Some(run) {
            continue;
        }
        let width = if run >= 4 { 4 } else { 2 };
        let last = offsets[&(lo + run - 1)];
        let bytes = first.elem.bytes.unwrap_or(4) as i64;
        out.push(Candidate {
            load: first,
            also: Vec::new(),
            message: format!(
                "{run} scalar loads of neighbouring elements of `{base}` (`{}` … `{}`) per thread, lanes {run} elements apart: {} {}-bit load{} would do",
                first.text,
                last.text,
                run / width,
                width * bytes * 8,
                if run / width > 1 { "s" } else { "" }
            ),
            guidance: format!(
                "Load {width} elements at once through a vector type, e.g. `reinterpret_cast<const {}*>({base})[i]` (the address must be {}-byte aligned).",
                vector_type(first, width),
                width * bytes
            ),
        });
    }
    out
}

/// `for (k = 0; k < s; ++k) … p[s*i + k]` with lanes `s` apart.
fn short_loops(model: &KernelModel) -> Vec<Candidate<'_>> {
    let mut out = Vec::new();
    for a in scalar_reads(model) {
        for l in model.loops_of(a) {
            let (Some(atom), Some(trip)) = (&l.atom, l.bound.as_ref().and_then(|b| b.as_constant())) else {
                continue;
            };
            if !matches!(&l.step, Step::Add(s) if s.as_constant() == Some(1))
                || !matches!(l.init.as_ref().and_then(|i| i.as_constant()), Some(0))
            {
                continue;
            }
            if a.index.coefficient(atom).as_constant() != Some(1)
                || a.lane_coefficient().as_constant() != Some(trip)
                || !(2..=8).contains(&trip)
            {
                continue;
            }
            let width = if trip % 4 == 0 { 4 } else { 2 };
            let var = l.var.as_deref().unwrap_or("k");
            out.push(Candidate {
                load: a,
                also: Vec::new(),
                message: format!("each thread reads `{}` one element per iteration of `{var}` ({trip} neighbouring elements, lanes {trip} apart): contiguous scalar loads a vector load would cover", a.text),
                guidance: format!(
                    "Step `{var}` by {width} and load a `{}` (`reinterpret_cast<const {}*>(&{})`) when the base is {}-byte aligned.",
                    vector_type(a, width),
                    vector_type(a, width),
                    a.text,
                    width * a.elem.bytes.unwrap_or(4) as i64
                ),
            });
            break;
        }
    }
    out
}

/// An elementwise map: its first load, when every global access is `p[i]`-like
/// (lanes one 4-byte element apart) and the only loops are grid-stride ones.
fn elementwise_map(model: &KernelModel) -> Vec<Candidate<'_>> {
    let global: Vec<&Access> = model.accesses.iter().filter(|a| a.space != Space::Local).collect();
    let contiguous = |a: &&Access| {
        a.space == Space::Global
            && !a.is_atomic()
            && a.elem.bytes == Some(4)
            && !a.elem.name.ends_with(char::is_numeric)
            && a.lane_coefficient().as_constant() == Some(1)
    };
    // One index per array: several offsets of one array are a stencil (MissedReuse's).
    let one_index = global.iter().all(|a| global.iter().all(|b| b.base != a.base || b.index == a.index));
    let map = one_index
        && !global.is_empty()
        && global.iter().all(contiguous)
        && global.iter().any(|a| !a.is_read())
        && model.loops.iter().all(|l| l.grid_stride);
    let Some(first) = global.iter().find(|a| a.kind == AccessKind::Read) else {
        return Vec::new();
    };
    if !map {
        return Vec::new();
    }
    // Every load of the first load's statement (`y[i] = a * x[i] + y[i]`: `x[i]` and `y[i]`).
    let mut loads: Vec<&Access> = Vec::new();
    for a in global.iter().filter(|a| a.kind == AccessKind::Read && a.statement == first.statement) {
        if !loads.iter().any(|b| b.text == a.text) {
            loads.push(a);
        }
    }
    let named = loads.iter().map(|a| format!("`{}`", a.text)).collect::<Vec<_>>().join(", ");
    let each = if loads.len() > 1 { " each" } else { "" };
    let bases: Vec<String> = loads.iter().map(|a| a.base.clone()).fold(Vec::new(), |mut v, b| {
        if !v.contains(&b) {
            v.push(b);
        }
        v
    });
    vec![Candidate {
        load: first,
        also: loads[1..].to_vec(),
        message: format!(
            "{named}: one 4-byte load{each} per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions"
        ),
        guidance: format!(
            "Process 4 elements per thread: load {} (16-byte aligned, with a scalar tail when the length is not a multiple of 4), apply the expression to each component, store a `{}` back; keep a grid-stride loop so any launch stays correct.",
            bases
                .iter()
                .map(|b| format!("`reinterpret_cast<const {}*>({b})[i]`", vector_type(first, 4)))
                .collect::<Vec<_>>()
                .join(" and "),
            vector_type(first, 4)
        ),
    }]
}
