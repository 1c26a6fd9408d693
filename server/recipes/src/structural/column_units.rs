//! Neighbouring units down columns. A thread per output that walks a long
//! loop whose reads are already coalesced across threads (neighbouring
//! outputs read neighbouring addresses: a sum or max over the middle axis of
//! `(B, R, C)`, `x[(b * R + j) * C + k]`) is slow for another reason: too few
//! threads, each with a long serial walk. Giving each unit a warp (WarpUnits)
//! would make the reads strided. Here a block takes 32 neighbouring units
//! (its lanes, so the reads stay coalesced) and its warps split each unit's
//! loop; the partial results meet through shared memory (`[32][33]`, no bank
//! conflicts), every thread folding them in the same order. The statements
//! after the loop run once per unit, on the first warp.

use super::launch::{Tuning, launch_variants};
use super::units_text::{UnitsText, render};
use super::warp_units::{carries, iterations_independent, walk_loop};
use super::{BLOCK_THREADS, BLOCK_TID, with_units_view};
use crate::kernel::Kernel;
use crate::syntax::{descendants, indent_at};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::kernel_model::{Atom, Dep, Space};
use kernelpro_source::units::recognize::{Piece, Units, declared_in, leaves_unit, stores, units, whole_warps};

pub struct ColumnUnits;

impl Recipe for ColumnUnits {
    fn name(&self) -> &'static str {
        "ColumnUnits"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::RowReduction]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::OccupancyLimiter, Code::RowWalk, Code::MemoryCoalescing]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        with_units_view(text, kernel, rewrites)
    }
}

/// Whether the loop over `c` walks columns: every global read inside it is
/// coalesced across lanes (lane coefficient 0 or 1) and at least one moves by
/// more than one element per iteration (the loop strides down a column).
/// A pointer the loop's update advances (`p += C`) moves the reads through it by
/// `C` per iteration, which the model does not follow: `advanced` names them.
fn walks_columns(k: &Kernel, c: &str, advanced: &[(String, String)]) -> bool {
    let Some(m) = k.model() else { return false };
    let Some(id) = m.loops.iter().position(|l| l.var.as_deref() == Some(c)) else { return false };
    // A short window (`for (dy = -R; dy <= R; ++dy)`, a few taps) is a stencil's, not a column walk.
    if m.loops[id].bound.as_ref().and_then(|b| b.as_constant()).is_some_and(|b| b.abs() <= 32) {
        return false;
    }
    // So is a window centred on the thread (`for (j = max(0, row - r); j < min(row + r + 1, h); ++j)`,
    // read by the model as its interior side): a start that moves with the thread and a trip
    // count that does not.
    if let (Some(init), Some(bound)) = (&m.loops[id].init, &m.loops[id].bound)
        && init.dep() == Dep::Thread
        && bound.sub(init).dep() == Dep::Uniform
    {
        return false;
    }
    let atom = m.loops[id].atom.clone().unwrap_or(Atom::Loop(c.to_string()));
    let reads: Vec<_> =
        m.accesses.iter().filter(|a| a.space == Space::Global && a.is_read() && a.loops.contains(&id)).collect();
    !reads.is_empty()
        && reads.iter().all(|a| matches!(a.lane_coefficient().as_constant(), Some(0 | 1)))
        && reads.iter().any(|a| {
            let step = a.index.coefficient(&atom);
            let through_advanced = advanced
                .iter()
                .any(|(p, by)| a.text.contains(p.as_str()) && by.trim().parse::<i64>().map_or(true, |b| b.abs() > 1));
            a.lane_coefficient().as_constant() == Some(1)
                && (through_advanced || (!step.is_zero() && step.as_constant().is_none_or(|s| s.abs() > 1)))
        })
}

/// A column walk: (c, START, the update, the pointers with their increments).
type ColumnWalk<'t> = (String, tree_sitter::Node<'t>, tree_sitter::Node<'t>, Vec<(String, String)>);

/// A walk loop (`for (T c = START; c < END; ++c)`), also one that advances
/// pointers with its counter (`++j, p += C`): (c, START, the update, the
/// pointers with their increments).
fn column_walk<'t>(k: &Kernel<'t>, f: tree_sitter::Node<'t>) -> Option<ColumnWalk<'t>> {
    if let Some((c, init, step)) = walk_loop(k, f) {
        return Some((c, init, step, Vec::new()));
    }
    let update = f.child_by_field_name("update").filter(|u| u.kind() == "comma_expression")?;
    let mut parts = Vec::new();
    let mut at = update;
    while at.kind() == "comma_expression" {
        parts.push(at.child_by_field_name("left")?);
        at = at.child_by_field_name("right")?;
    }
    parts.push(at);
    let (first, rest) = parts.split_first()?;
    let mut pointers = Vec::new();
    for p in rest {
        let ok = p.kind() == "assignment_expression" && k.text_of(p.child_by_field_name("operator")?) == "+=";
        let target = p.child_by_field_name("left").filter(|t| t.kind() == "identifier")?;
        let by = p.child_by_field_name("right")?;
        if !ok || k.param(k.text_of(target)).is_some() {
            return None;
        }
        pointers.push((k.text_of(target).to_string(), k.text_of(by).to_string()));
    }
    // The counter's own step, checked as walk_loop checks it, on a copy of the loop without the pointers.
    let c = {
        let init = f.child_by_field_name("initializer").filter(|d| d.kind() == "declaration")?;
        let decl = init.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
        (k.text_of(decl.child_by_field_name("declarator")?).to_string(), decl.child_by_field_name("value")?)
    };
    let flat = kernelpro_source::units::recognize::flat(k, *first);
    let steps = [format!("++{}", c.0), format!("{}++", c.0), format!("{}+=1", c.0)];
    let cond = kernelpro_source::units::recognize::strip_parens(f.child_by_field_name("condition")?);
    let fine = cond.kind() == "binary_expression"
        && ["<", "<="].contains(&k.text_of(cond.child_by_field_name("operator")?))
        && cond.child_by_field_name("left").is_some_and(|l| k.text_of(l) == c.0);
    (steps.contains(&flat) && fine).then_some((c.0, c.1, update, pointers))
}

fn generate(k: &Kernel, u: &Units) -> Option<String> {
    let body = k.body();
    let outer = indent_at(k.text, body.start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let mut lines: Vec<String> = Vec::new();
    let mut split = 0;
    for piece in &u.body {
        let Piece::Node(n) = *piece else {
            // A skipped unit's `continue` would let its threads miss the block's barriers.
            if matches!(piece, Piece::Skip(..)) {
                return None;
            }
            lines.push(render(k, *piece, &[], "")?);
            continue;
        };
        if let Some((c, init, step, pointers)) = column_walk(k, n) {
            if split > 0
                || descendants(n).iter().any(|d| d.kind() == "break_statement")
                || !iterations_independent(k, n, &c)
                || u.names().contains(&c.as_str())
                || !stores(k, n).is_empty()
                || !walks_columns(k, &c, &pointers)
            {
                return None;
            }
            let carried = carries(k, n, &c)?;
            lines.extend(carried.iter().filter_map(|c| c.before("kp_row")));
            // Pointers the loop advances (`++j, p += C`) start kp_row steps in and move kp_nw steps at a time.
            for (p, by) in &pointers {
                if u.body.iter().any(|q| matches!(q, Piece::Node(m) if m.start_byte() > n.end_byte() && super::warp_units::mentions(k, *m, p))) {
                    return None;
                }
                lines.push(format!("{p} += ({by}) * kp_row;"));
            }
            let advance: String = pointers.iter().map(|(p, by)| format!(", {p} += ({by}) * kp_nw")).collect();
            let edits = [
                (init.byte_range(), format!("{} + kp_row", k.text_of(init))),
                (step.byte_range(), format!("{c} += kp_nw{advance}")),
            ];
            // Each thread walks a long column share with one load an iteration: unrolled, the loads
            // (which do not depend on the carried values) issue together and cover DRAM latency.
            lines.push("#pragma unroll 4".to_string());
            lines.push(render(k, *piece, &edits, "")?);
            for carry in &carried {
                lines.push(carry.across_columns());
            }
            split += 1;
            continue;
        }
        let st = stores(k, n);
        if leaves_unit(n) || descendants(n).iter().any(|d| kernelpro_source::units::recognize::is_loop(*d)) {
            return None;
        }
        if st.is_empty() {
            lines.push(render(k, *piece, &[], "")?);
            continue;
        }
        // A store runs once per unit (first warp, units in range); it may not set values read later.
        if n.kind() == "declaration" || !declared_in(k, n).is_empty() {
            return None;
        }
        // Lines are indented relative to each other: the unit loop's indentation is added to each.
        lines.push(format!("if (kp_row == 0 && kp_active) {{\n  {}\n}}", render(k, *piece, &[], "  ")?));
    }
    if split == 0 {
        return None;
    }
    let mut inner = String::new();
    for l in u.rebind("kp_u").lines().chain(lines.iter().flat_map(|l| l.lines())) {
        inner.push_str(&format!("{ind2}{l}\n"));
    }
    let prologue = u.prologue(k, &ind)?;
    let (block, blocks) = (u.block_index(), u.block_count());
    Some(format!(
        "{{\n{ind}// 32 neighbouring units per block, its warps splitting each unit's loop; partials meet in shared memory (kernelpro ColumnUnits).\n{prologue}{ind}const int kp_col = (int)({BLOCK_TID} & 31u);\n{ind}const int kp_row = (int)({BLOCK_TID} >> 5);\n{ind}const int kp_nw = (int)({BLOCK_THREADS} >> 5);\n{ind}const long long kp_count = {};\n{ind}for (long long kp_base = {block} * 32; kp_base < kp_count; kp_base += {blocks} * 32) {{\n{ind2}// Lanes past the last unit walk the last one again (every thread meets the barriers) and store nothing.\n{ind2}const bool kp_active = kp_base + kp_col < kp_count;\n{ind2}const long long kp_u = kp_active ? kp_base + kp_col : kp_count - 1;\n{inner}{ind}}}\n{outer}}}",
        u.count()
    ))
}

fn rewrites(k: &Kernel) -> Vec<Rewrite> {
    let Some(u) = units(k) else { return Vec::new() };
    // A dot product per output reuses its operands across outputs: TiledContraction's case.
    let contraction = k
        .model()
        .and_then(|m| m.pattern())
        .is_some_and(|p| p.pattern == kernelpro_source::kernel_model::Pattern::Contraction);
    if !whole_warps(k) || contraction {
        return Vec::new();
    }
    let Some(text) = generate(k, &u) else { return Vec::new() };
    let source = k.with_body(&text);
    let note = format!(
        "32 neighbouring units per block ({}), coalesced as before, its warps splitting each unit's loop",
        u.names().join(", ")
    );
    launch_variants(k, &Rewrite { source, note }, &u, Tuning::Columns)
}
