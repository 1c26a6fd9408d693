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
use super::recognize::{Piece, Units, names_in, render, stores, units, whole_warps};
use super::{BLOCK_THREADS, BLOCK_TID};
use crate::kernel::Kernel;
use crate::syntax::{atomic_add, descendants, indent_at};
use crate::{Recipe, Rewrite};
use tree_sitter::Node;

pub struct GridStrideMap;
pub struct BlockReduce;

/// Types `atomicAdd` and `__shfl_down_sync` both take.
const SUM_TYPES: &[&str] = &["float", "double", "int", "unsigned", "unsigned int", "unsigned long long", "unsigned long long int", "long long"];

/// The unit loop around `lines` (each already indented text), re-binding the user's indices.
fn unit_loop(k: &Kernel, u: &Units, lines: &[String], head: &str, tail: &str, label: &str) -> String {
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
    format!("{{\n{ind}// {label} (kernelpro).\n{prologue}{head}{ind}for (long long kp_u = {}; kp_u < {}; kp_u += {}) {{\n{inner}{ind}}}\n{tail}{outer}}}", u.grid_tid(), u.count(), u.grid_threads())
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
    let text = unit_loop(k, &u, &lines, "", "", "grid-stride over the units");
    let mut source = k.text.to_string();
    source.replace_range(k.body().byte_range(), &text);
    let note = format!("grid-stride map over ({})", u.names().join(", "));
    launch_variants(k, &Rewrite { source, note }, &u, Tuning::Threads)
}

/// A `for` bounded by an integer literal below 64.
fn short_loop(k: &Kernel, f: Node) -> bool {
    let cond = f.child_by_field_name("condition").map(super::recognize::strip_parens);
    cond.and_then(|c| c.child_by_field_name("right")).is_some_and(|r| k.text_of(r).trim().parse::<i64>().is_ok_and(|n| n < 64))
}

fn reduce_rewrites(k: &Kernel) -> Vec<Rewrite> {
    let Some(u) = units(k) else { return Vec::new() };
    if !whole_warps(k) {
        return Vec::new();
    }
    let nodes: Vec<Node> = u.body.iter().filter_map(|p| if let Piece::Node(n) = p { Some(*n) } else { None }).collect();
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
    // The address is the same for every unit: parameters and literals only.
    let addr_names = names_in(k, addr);
    if addr_names.iter().any(|n| k.param(n).is_none()) || descendants(addr).iter().any(|d| d.kind() == "call_expression") {
        return Vec::new();
    }
    let Some(ty) = addr_names.iter().find_map(|n| k.param(n).filter(|p| p.pointer)).map(|p| p.base.clone()) else {
        return Vec::new();
    };
    if !SUM_TYPES.contains(&ty.as_str()) {
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
    let addr = k.text_of(addr);
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
    fn answers(&self) -> &'static [&'static str] {
        &["TailEffect", "LaunchOverhead", "OccupancyLimiter"]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else {
            return Vec::new();
        };
        // Kernels that store through an atomic are BlockReduce's or the histogram recipe's.
        if units(&k).is_some_and(|u| u.body.iter().any(|p| matches!(p, Piece::Node(n) if stores(&k, *n).iter().any(|(f, _)| f.starts_with("atomic"))))) {
            return Vec::new();
        }
        map_rewrites(&k)
    }
}

impl Recipe for BlockReduce {
    fn name(&self) -> &'static str {
        "BlockReduce"
    }
    fn answers(&self) -> &'static [&'static str] {
        &["AtomicContention", "WarpStall"]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        Kernel::find(text, kernel).map(|k| reduce_rewrites(&k)).unwrap_or_default()
    }
}
