//! Thread-per-unit kernels made grid-stride.
//!
//! [`GridStrideMap`]: a map (no loop long enough for a warp, see
//! [`super::WarpUnits`]) walks its units with a grid stride, so the tuner may
//! launch a few waves of full blocks instead of one thread per element.
//!
//! [`BlockReduce`]: a kernel whose only store is one `atomicAdd(ADDR, V)` into
//! an address that is the same for every unit (a sum into `out[0]`) adds its
//! units' values in a register instead, then combines them with warp
//! shuffles, a shared array of warp sums and one atomic per block: on a 16M
//! element sum, 16M atomics on one address become a few hundred.

use super::launch::{Tuning, launch_variants};
use super::units_text::{UnitsText, render};
use super::{BLOCK_THREADS, BLOCK_TID};
use crate::kernel::Kernel;
use crate::syntax::{atomic_add, descendants, indent_at, uses};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::units::recognize::{Piece, Units, names_in, stores, units, whole_warps};
use tree_sitter::Node;

pub struct GridStrideMap;
pub struct BlockReduce;

/// Types `atomicAdd` and `__shfl_down_sync` both take.
const SUM_TYPES: &[&str] = &[
    "float",
    "double",
    "int",
    "unsigned",
    "unsigned int",
    "unsigned long long",
    "unsigned long long int",
    "long long",
];

/// The type a file-level `typedef T name;` names (`typedef float real;`), spaces collapsed.
fn typedef_of(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("typedef ")?.trim_end().strip_suffix(';')?;
        let (ty, n) = rest.rsplit_once(char::is_whitespace)?;
        (n == name).then(|| ty.split_whitespace().collect::<Vec<_>>().join(" "))
    })
}

/// The unit loop around `lines` (each already indented text), re-binding the user's indices.
pub(super) fn unit_loop(k: &Kernel, u: &Units, lines: &[String], head: &str, tail: &str, label: &str) -> String {
    let body = k.body();
    let outer = indent_at(k.text, body.start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let mut inner = String::new();
    for l in u.rebind("kp_u").lines().map(str::to_string).chain(lines.iter().cloned()) {
        inner.push_str(&format!("{ind2}{l}\n"));
    }
    let head: String = head.lines().map(|l| format!("{ind}{l}\n")).collect();
    let tail: String = tail.lines().map(|l| format!("{ind}{l}\n")).collect();
    let prologue = u.prologue(k, &ind).unwrap_or_default();
    format!(
        "{{\n{ind}// {label} (kernelpro).\n{prologue}{head}{ind}for (long long kp_u = {}; kp_u < {}; kp_u += {}) {{\n{inner}{ind}}}\n{tail}{outer}}}",
        u.grid_tid(),
        u.count(),
        u.grid_threads()
    )
}

fn map_rewrites(k: &Kernel) -> Vec<Rewrite> {
    let Some(u) = units(k) else { return Vec::new() };
    let ind2 = format!("{}    ", indent_at(k.text, k.body().start_byte()));
    let mut lines = Vec::new();
    for p in &u.body {
        // A long loop per unit is WarpUnits' case; a map's loops are short or absent.
        if let Piece::Node(n) = p
            && descendants(*n).into_iter().any(|d| d.kind() == "for_statement" && !short_loop(k, d))
        {
            return Vec::new();
        }
        let Some(text) = render(k, *p, &[], &ind2) else {
            return Vec::new();
        };
        lines.push(text);
    }
    let mut out = Vec::new();
    if let Some(text) = vectorized(k, &u, &lines) {
        let mut source = k.text.to_string();
        source.replace_range(k.body().byte_range(), &text);
        let note = format!(
            "grid-stride map over ({}), four units a step through 128-bit streaming loads and stores",
            u.names().join(", ")
        );
        out.extend(launch_variants(k, &Rewrite { source, note }, &u, Tuning::Vec4Threads));
    }
    let text = unit_loop(k, &u, &lines, "", "", "grid-stride over the units");
    let mut source = k.text.to_string();
    source.replace_range(k.body().byte_range(), &text);
    let note = format!("grid-stride map over ({})", u.names().join(", "));
    out.extend(launch_variants(k, &Rewrite { source, note }, &u, Tuning::Threads));
    out
}

/// The map with four consecutive units a step: every buffer is `float` and
/// touched only at the unit's own index (`x[i]`), stores are unconditional
/// top-level `y[i] = e;` and a stored buffer is read only before its first
/// store. Loads become one `float4` (`__ldcs`), each unit's statements run on
/// its component, stores gather into a `float4` (`__stcs`); the units past the
/// last multiple of four run the original statements. `lines` is the scalar
/// body for that tail.
fn vectorized(k: &Kernel, u: &Units, lines: &[String]) -> Option<String> {
    let [index] = &u.indices[..] else { return None };
    if !u.fixed.is_empty() {
        return None;
    }
    let i = index.name.as_str();
    let nodes: Vec<Node> = u.only_nodes()?;
    let mut reads: Vec<String> = Vec::new();
    let mut writes: Vec<(String, usize)> = Vec::new();
    let mut edits_of: Vec<Vec<(std::ops::Range<usize>, String)>> = vec![Vec::new(); nodes.len()];
    for (at, n) in nodes.iter().enumerate() {
        if descendants(*n).iter().any(|d| {
            matches!(
                d.kind(),
                "return_statement"
                    | "continue_statement"
                    | "break_statement"
                    | "goto_statement"
                    | "pointer_expression"
                    | "update_expression"
            )
        }) {
            return None;
        }
        for d in descendants(*n) {
            if d.kind() == "assignment_expression"
                && d.child_by_field_name("left").is_some_and(|l| l.kind() == "subscript_expression")
            {
                let top = d.parent().is_some_and(|p| p.kind() == "expression_statement" && p == *n);
                if !top || d.child_by_field_name("operator").is_none_or(|o| k.text_of(o) != "=") {
                    return None;
                }
            }
            if d.kind() != "subscript_expression" {
                continue;
            }
            let p = k.text_of(d.child_by_field_name("argument")?);
            let idx = d
                .child_by_field_name("indices")
                .and_then(|x| x.named_child(0))
                .map(|x| kernelpro_source::units::recognize::flat(k, x))?;
            if idx != i || k.param(p).is_none_or(|q| !q.pointer || q.base != "float") {
                return None;
            }
            let stored = d
                .parent()
                .is_some_and(|a| a.kind() == "assignment_expression" && a.child_by_field_name("left") == Some(d));
            if stored {
                if !writes.iter().any(|(w, _)| w == p) {
                    writes.push((p.to_string(), d.parent()?.end_byte()));
                }
                edits_of[at].push((d.byte_range(), format!("kp_o_{p}.kp_c")));
            } else {
                if writes.iter().any(|(w, end)| w == p && d.start_byte() > *end) {
                    return None;
                }
                if !reads.iter().any(|r| r == p) {
                    reads.push(p.to_string());
                }
                edits_of[at].push((d.byte_range(), format!("kp_i_{p}.kp_c")));
            }
        }
    }
    if writes.is_empty() {
        return None;
    }
    let outer = indent_at(k.text, k.body().start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let ind3 = format!("{ind2}  ");
    let units = u.count();
    let mut step = String::new();
    for r in &reads {
        step.push_str(&format!("{ind2}const float4 kp_i_{r} = __ldcs(reinterpret_cast<const float4*>({r}) + kp_v);\n"));
    }
    for (w, _) in &writes {
        step.push_str(&format!("{ind2}float4 kp_o_{w};\n"));
    }
    // The unit's index is bound in each component only where a statement still
    // names it outside the loads and stores that became components: an unused
    // local is an nvcc warning (#177-D) on every candidate.
    let index_used = nodes
        .iter()
        .zip(&edits_of)
        .any(|(n, edits)| uses(*n, k.text, i).iter().any(|u| !edits.iter().any(|(r, _)| r.contains(&u.start_byte()))));
    for c in ["x", "y", "z", "w"] {
        let lane = ["x", "y", "z", "w"].iter().position(|l| *l == c).expect("component");
        step.push_str(&format!("{ind2}{{\n"));
        if index_used {
            step.push_str(&format!("{ind3}const {} {i} = ({})(kp_v * 4 + {lane});\n", index.ty, index.ty));
        }
        for (at, n) in nodes.iter().enumerate() {
            let edits: Vec<_> = edits_of[at].iter().map(|(r, w)| (r.clone(), w.replace("kp_c", c))).collect();
            step.push_str(&format!("{ind3}{}\n", render(k, Piece::Node(*n), &edits, &ind3)?));
        }
        step.push_str(&format!("{ind2}}}\n"));
    }
    for (w, _) in &writes {
        step.push_str(&format!("{ind2}__stcs(reinterpret_cast<float4*>({w}) + kp_v, kp_o_{w});\n"));
    }
    let tail: String = u
        .rebind("kp_u")
        .lines()
        .map(str::to_string)
        .chain(lines.iter().cloned())
        .map(|l| format!("{ind2}{l}\n"))
        .collect();
    Some(format!(
        "{{\n{ind}// grid-stride over the units, four a step through float4 (kernelpro).\n{}{ind}for (long long kp_v = {}; kp_v < ({units}) / 4; kp_v += {}) {{\n{step}{ind}}}\n{ind}for (long long kp_u = ({units}) / 4 * 4 + {}; kp_u < {units}; kp_u += {}) {{\n{tail}{ind}}}\n{outer}}}",
        u.prologue(k, &ind)?,
        u.grid_tid(),
        u.grid_threads(),
        u.grid_tid(),
        u.grid_threads()
    ))
}

/// A `for` bounded by an integer literal below 64.
fn short_loop(k: &Kernel, f: Node) -> bool {
    let cond = f.child_by_field_name("condition").map(kernelpro_source::units::recognize::strip_parens);
    cond.and_then(|c| c.child_by_field_name("right"))
        .is_some_and(|r| k.text_of(r).trim().parse::<i64>().is_ok_and(|n| n < 64))
}

fn reduce_rewrites(k: &Kernel) -> Vec<Rewrite> {
    let Some(u) = units(k) else { return Vec::new() };
    if !whole_warps(k) {
        return Vec::new();
    }
    let nodes: Vec<Node> = u.nodes();
    let all_stores: Vec<_> = nodes.iter().flat_map(|n| stores(k, *n)).collect();
    let [(f, call)] = &all_stores[..] else {
        return Vec::new();
    };
    if f != "atomicAdd" {
        return Vec::new();
    }
    let Some(st) = call.parent().filter(|s| s.kind() == "expression_statement") else {
        return Vec::new();
    };
    let Some((addr, value)) = atomic_add(k.text, st) else {
        return Vec::new();
    };
    // The address is the same for every unit: parameters and literals only, or
    // what the model sees as a constant offset from a buffer (`T* acc = result + 0;`).
    let addr_names = names_in(k, addr);
    // A launch's fixed row (`row = blockIdx.y`) is the same for all of a block's units too.
    let (addr_text, buffer) = if addr_names.iter().all(|n| k.param(n).is_some() || u.fixed.iter().any(|f| f.0 == *n))
        && !descendants(addr).iter().any(|d| d.kind() == "call_expression")
    {
        let Some(p) = addr_names.iter().find_map(|n| k.param(n).filter(|p| p.pointer)) else { return Vec::new() };
        (k.text_of(addr).to_string(), p.name.clone())
    } else {
        let model = k.model();
        let found = model.as_ref().and_then(|m| {
            m.accesses.iter().find(|a| {
                a.is_atomic()
                    && a.text.split_whitespace().collect::<String>()
                        == k.text_of(*call).split_whitespace().collect::<String>()
            })
        });
        let Some((base, c)) = found
            .and_then(|a| Some((a.base.clone(), a.index.as_constant()?)))
            .filter(|(b, _)| k.param(b).is_some_and(|p| p.pointer))
        else {
            return Vec::new();
        };
        (format!("&{base}[{c}]"), base)
    };
    let Some(p) = k.param(&buffer) else { return Vec::new() };
    // A template's element type is the one the spec instantiates.
    let ty = p.base.clone();
    if !(SUM_TYPES.contains(&ty.as_str())
        || k.func.is_template && k.buffer_type(&buffer).is_some_and(|t| SUM_TYPES.contains(&t))
        || typedef_of(k.text, &ty).is_some_and(|t| SUM_TYPES.contains(&t.as_str())))
    {
        return Vec::new();
    }
    let ind2 = format!("{}    ", indent_at(k.text, k.body().start_byte()));
    let mut lines = Vec::new();
    for p in &u.body {
        let edits = match p {
            Piece::Node(n) if n.byte_range().contains(&st.start_byte()) => {
                vec![(st.byte_range(), format!("kp_acc += {};", k.text_of(value)))]
            }
            _ => vec![],
        };
        let Some(text) = render(k, *p, &edits, &ind2) else {
            return Vec::new();
        };
        lines.push(text);
    }
    let head = format!("{ty} kp_acc = 0;\n");
    let addr = addr_text.as_str();
    let tail = format!(
        "__shared__ {ty} kp_part[32];\n\
         const unsigned kp_tid = {BLOCK_TID};\n\
         for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_acc += __shfl_down_sync(0xffffffffu, kp_acc, kp_o);\n\
         if ((kp_tid & 31u) == 0) kp_part[kp_tid >> 5] = kp_acc;\n\
         __syncthreads();\n\
         if (kp_tid < 32u) {{\n  {ty} kp_v = kp_tid < {BLOCK_THREADS} / 32u ? kp_part[kp_tid] : ({ty})0;\n  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);\n  if (kp_tid == 0) atomicAdd({addr}, kp_v);\n}}\n"
    );
    let text = unit_loop(k, &u, &lines, &head, &tail, "grid-stride sum, warp shuffles, one atomic per block");
    let mut source = k.text.to_string();
    source.replace_range(k.body().byte_range(), &text);
    let note = format!("hierarchical reduction into {addr}: register sum, warp shuffles, one atomicAdd per block");
    launch_variants(k, &Rewrite { source, note }, &u, Tuning::Reduce)
}

impl Recipe for GridStrideMap {
    fn name(&self) -> &'static str {
        "GridStrideMap"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::Map]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::TailEffect, Code::LaunchOverhead, Code::OccupancyLimiter]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        super::with_units_view(text, kernel, |k| {
            // Kernels that store through an atomic are BlockReduce's or the histogram recipe's.
            if units(k).is_some_and(|u| {
                u.body
                    .iter()
                    .any(|p| matches!(p, Piece::Node(n) if stores(k, *n).iter().any(|(f, _)| f.starts_with("atomic"))))
            }) {
                return Vec::new();
            }
            map_rewrites(k)
        })
    }
}

impl Recipe for BlockReduce {
    fn name(&self) -> &'static str {
        "BlockReduce"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::ScalarReduction]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::AtomicContention, Code::ContendedAtomics, Code::WarpStall]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let direct = super::with_units_view(text, kernel, reduce_rewrites);
        if !direct.is_empty() {
            return direct;
        }
        // A block tree whose root is added to a shared address: the same sum, one atomic per element.
        let Some(view) = super::tree_atomic::per_element(text, kernel) else { return direct };
        super::with_units_view(&view, kernel, reduce_rewrites)
            .into_iter()
            .map(|rw| Rewrite {
                source: rw.source,
                note: format!(
                    "each block's shared-memory tree into one atomic read as every element added to the shared address, then {}",
                    rw.note
                ),
            })
            .collect()
    }
}
