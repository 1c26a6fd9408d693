//! The launch tuner: a structural rewrite walks its work units with a grid
//! stride, so any launch is correct; this proposes, besides the rewrite under
//! the user's own launch, variants that also rewrite the spec's `grid` and
//! `block` lines. Grids are written in the spec's own names (the unit count
//! from the bindings of the guard's bounds) and capped at a multiple of the
//! SM count, e.g. `grid = min(ceil_div(ROWS, 8), 132 * 16)`.

use super::recognize::Units;
use crate::Rewrite;
use crate::kernel::Kernel;

/// Streaming multiprocessors of the target (H100/H200 SXM).
pub(crate) const SMS: u32 = 132;

/// How many units a block takes in one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Tuning {
    /// A warp per unit.
    Warps,
    /// A block per unit.
    Blocks,
    /// A thread per unit (maps).
    Threads,
    /// Four units a thread (a map through float4): first one float4 per thread over the whole
    /// grid, as PyTorch's vectorized elementwise kernels launch, then the grid-stride caps.
    Vec4Threads,
    /// A thread per unit, few blocks (one atomic per block).
    Reduce,
    /// `units` units (output elements) per block of `threads`: one launch only.
    Tiles { threads: u32, units: u32 },
    /// 32 neighbouring units per block, its warps splitting each unit's loop.
    Columns,
}

impl Tuning {
    /// (block threads, units per block, grid cap in multiples of the SM count).
    fn choices(self) -> Vec<(u32, u32, u32)> {
        match self {
            Tuning::Warps => vec![(256, 8, 16), (128, 4, 32), (512, 16, 8)],
            Tuning::Blocks => vec![(512, 1, 4), (1024, 1, 2)],
            Tuning::Threads => vec![(256, 256, 8), (512, 512, 4), (1024, 1024, 2)],
            Tuning::Vec4Threads => vec![(256, 1024, 0), (256, 256, 8), (512, 512, 4), (1024, 1024, 2)],
            Tuning::Reduce => vec![(512, 512, 2), (256, 256, 4), (1024, 1024, 1)],
            Tuning::Tiles { threads, units } => vec![(threads, units, 0)],
            Tuning::Columns => vec![(256, 32, 16), (512, 32, 8), (1024, 32, 4)],
        }
    }
}

/// The unit count in the spec's names: each bound's scalar parameter replaced by its binding.
fn spec_units(k: &Kernel, u: &Units) -> Option<String> {
    let mut factors = Vec::new();
    for i in &u.indices {
        let mut out = String::new();
        let b = &i.bound;
        let mut chars = b.char_indices().peekable();
        while let Some((at, ch)) = chars.next() {
            if ch.is_alphabetic() || ch == '_' {
                let mut end = at + ch.len_utf8();
                while let Some((e, c)) = chars.peek().copied().filter(|(_, c)| c.is_alphanumeric() || *c == '_') {
                    end = e + c.len_utf8();
                    chars.next();
                }
                let name = &b[at..end];
                let binding = k.spec_lines().iter().find_map(|l| {
                    l.text.split_once('=').filter(|(lhs, _)| lhs.trim() == name).map(|(_, rhs)| rhs.trim().to_string())
                });
                let p = k.param(name).filter(|p| !p.pointer)?;
                let _ = p;
                let binding = binding?;
                let simple = binding.chars().all(|c| c.is_alphanumeric() || c == '_');
                out.push_str(&if simple { binding } else { format!("({binding})") });
            } else if ch.is_ascii_digit() || " +-*/()".contains(ch) {
                out.push(ch);
            } else {
                return None;
            }
        }
        factors.push(out.trim().to_string());
    }
    if factors.len() == 1 {
        return factors.pop();
    }
    Some(factors.iter().map(|f| format!("({f})")).collect::<Vec<_>>().join(" * "))
}

/// The rewrite under the user's launch, then one variant per launch choice.
pub(crate) fn launch_variants(k: &Kernel, base: &Rewrite, u: &Units, tuning: Tuning) -> Vec<Rewrite> {
    let mut out = vec![base.clone()];
    let lines = k.spec_lines();
    let grid = lines.iter().find(|l| kernelpro_spec::launch_part(&l.text) == Some("grid"));
    let block = lines.iter().find(|l| kernelpro_spec::launch_part(&l.text) == Some("block"));
    let (Some(grid), Some(block)) = (grid, block) else {
        return out;
    };
    let units = spec_units(k, u);
    for (threads, per_block, cap) in tuning.choices() {
        let g = match (&units, cap) {
            (Some(n), 0) => format!("ceil_div({n}, {per_block})"),
            (Some(n), cap) => format!("min(ceil_div({n}, {per_block}), {SMS} * {cap})"),
            (None, 0) => continue,
            (None, cap) => format!("{SMS} * {cap}"),
        };
        // Fixed block indices keep the launch's y and z (z alone for a batch on z): the x extent changes.
        let g = if u.fixed.is_empty() {
            g
        } else {
            let Some(rest) = grid.text.split_once('=').map(|(_, r)| r.trim()) else { continue };
            let Some(parts) = tuple_parts(rest) else { continue };
            format!("({})", std::iter::once(g).chain(u.kept_extents(&parts)).collect::<Vec<_>>().join(", "))
        };
        let (g_at, b_at) = (k.spec_offset(grid), k.spec_offset(block));
        let mut source = base.source.clone();
        // Spec lines sit above the kernel's body, so their offsets hold in the rewritten text; the later one first.
        let mut edits =
            [(g_at, grid.text.len(), format!("grid = {g}")), (b_at, block.text.len(), format!("block = {threads}"))];
        edits.sort_by_key(|e| std::cmp::Reverse(e.0));
        for (at, len, with) in edits {
            source.replace_range(at..at + len, &with);
        }
        if source == base.source {
            continue;
        }
        out.push(Rewrite { source, note: format!("{}; launch block = {threads}, grid = {g}", base.note) });
    }
    // The rewrite as is idles most of the GPU under a launch of fewer blocks
    // than SMs (one thread per row of 128 rows is one block), and so does a
    // float4 map under its thread-per-unit launch (three threads in four find
    // no float4): the launch variants go first, so that a search with time for
    // a few evaluations measures them.
    let idles = tuning == Tuning::Vec4Threads || k.launch().is_some_and(|l| l.grid.iter().product::<u32>() < SMS);
    if out.len() > 1 && idles {
        out.rotate_left(1);
    }
    out
}

/// `(a, b[, c])` split at its top-level commas (the spec parser's splitter).
fn tuple_parts(text: &str) -> Option<Vec<String>> {
    let inner = text.strip_prefix('(')?.strip_suffix(')')?;
    let parts: Vec<String> =
        kernelpro_spec::split_top_level(inner).into_iter().map(|(_, p)| p.trim().to_string()).collect();
    (parts.len() >= 2).then_some(parts)
}
