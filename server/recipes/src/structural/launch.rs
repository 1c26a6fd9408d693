//! The launch tuner: a structural rewrite walks its work units with a grid
//! stride, so any launch is correct; this proposes, besides the rewrite under
//! the user's own launch, variants that also rewrite the spec's `grid` and
//! `block` lines. Grids are written in the spec's own names (the unit count
//! from the bindings of the guard's bounds) and capped at a multiple of the
//! SM count, e.g. `grid = min(ceil_div(ROWS, 8), 132 * 16)`.

use super::units_text::UnitsText;
use crate::Rewrite;
use crate::kernel::Kernel;
use crate::syntax::edited;
use kernelpro_source::units::recognize::{Piece, Units, declared_in};

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
    /// Two float4 of units a thread a step: one step per thread over the grid (256 and 512 threads).
    Vec4Pairs,
    /// A thread per unit, few blocks (one atomic per block).
    Reduce,
    /// `units` units (output elements) per block of `threads`: one launch only.
    Tiles { threads: u32, units: u32 },
    /// 32 neighbouring units per block, its warps splitting each unit's loop.
    Columns,
    /// A cluster of this many blocks per unit: the grid a multiple of it.
    Clusters(u32),
}

impl Tuning {
    /// Whether the rewrite is also offered under the user's own launch: not a form of several
    /// float4 a thread, where seven threads in eight of a thread-per-unit launch find no work.
    fn keeps_user_launch(self) -> bool {
        self != Tuning::Vec4Pairs
    }

    /// (block threads, units per block, grid cap in multiples of the SM count).
    fn choices(self) -> Vec<(u32, u32, u32)> {
        match self {
            Tuning::Warps => vec![(256, 8, 16), (128, 4, 32), (512, 16, 8)],
            Tuning::Blocks => vec![(512, 1, 4), (1024, 1, 2)],
            Tuning::Threads => vec![(256, 256, 8), (512, 512, 4), (1024, 1024, 2)],
            Tuning::Vec4Threads => vec![(256, 1024, 0), (256, 256, 8), (512, 512, 4), (1024, 1024, 2)],
            Tuning::Vec4Pairs => vec![(256, 2048, 0), (512, 4096, 0)],
            Tuning::Reduce => vec![(512, 512, 2), (256, 256, 4), (1024, 1024, 1)],
            Tuning::Tiles { threads, units } => vec![(threads, units, 0)],
            Tuning::Columns => vec![(256, 32, 16), (512, 32, 8), (1024, 32, 4)],
            // Per block: the cluster's share of a unit (see `launch_variants`).
            Tuning::Clusters(_) => vec![(512, 1, 4), (1024, 1, 2)],
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

/// The rewrite under the user's launch (where the tuning keeps it), then one variant per launch choice.
pub(crate) fn launch_variants(k: &Kernel, base: &Rewrite, u: &Units, tuning: Tuning) -> Vec<Rewrite> {
    let mut out = if tuning.keeps_user_launch() { vec![base.clone()] } else { Vec::new() };
    if sized_by_launch(k, u) {
        tracing::debug!(kernel = %k.func.name, "units sized by the launch: no launch variant");
        return out;
    }
    let lines = k.spec_lines();
    let grid = lines.iter().find(|l| kernelpro_spec::launch_part(&l.text) == Some("grid"));
    let block = lines.iter().find(|l| kernelpro_spec::launch_part(&l.text) == Some("block"));
    let (Some(grid), Some(block)) = (grid, block) else {
        return out;
    };
    let units = spec_units(k, u);
    for (threads, per_block, cap) in tuning.choices() {
        let g = match (&units, cap, tuning) {
            // A cluster of C blocks per unit, C blocks a unit where the SMs hold them all, else as many
            // as they hold: both multiples of C (`SMS * cap` is, for C dividing 8 and an even cap).
            (Some(n), cap, Tuning::Clusters(c)) => {
                let n =
                    if n.chars().all(|ch| ch.is_alphanumeric() || ch == '_') { n.clone() } else { format!("({n})") };
                format!("min({n} * {c}, {SMS} * {cap})")
            }
            (None, cap, Tuning::Clusters(_)) => format!("{SMS} * {cap}"),
            (Some(n), 0, _) => format!("ceil_div({n}, {per_block})"),
            (Some(n), cap, _) => format!("min(ceil_div({n}, {per_block}), {SMS} * {cap})"),
            (None, 0, _) => continue,
            (None, cap, _) => format!("{SMS} * {cap}"),
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
        // Spec lines sit above the kernel's body, so their offsets hold in the rewritten text.
        let edits = [
            (g_at..g_at + grid.text.len(), format!("grid = {g}")),
            (b_at..b_at + block.text.len(), format!("block = {threads}")),
        ];
        let source = edited(&base.source, edits);
        if source == base.source {
            continue;
        }
        if let Err(why) = within_device_limits(&source, &k.func.name) {
            tracing::debug!(kernel = %k.func.name, %why, "launch variant dropped");
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
    if tuning.keeps_user_launch() && out.len() > 1 && idles {
        out.rotate_left(1);
    }
    out
}

/// Whether the units' extent comes from the launch itself: a bound, or a uniform declaration the
/// units use, that reads `gridDim` or `blockDim` (`width = gridDim.x * TILE` where no parameter
/// carries the size). Such a rewrite is the original's work only under the user's launch.
pub(crate) fn sized_by_launch(k: &Kernel, u: &Units) -> bool {
    let launch_dependent =
        |t: &str| t.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == "gridDim" || w == "blockDim");
    if u.indices.iter().any(|i| launch_dependent(&i.bound)) {
        return true;
    }
    let used: Vec<&str> = u
        .body
        .iter()
        .map(|p| match p {
            Piece::Node(n) | Piece::Derived(n) | Piece::Skip(n, _) => k.text_of(*n),
        })
        .collect();
    u.head.iter().filter(|h| launch_dependent(k.text_of(**h))).any(|h| {
        declared_in(k, *h)
            .iter()
            .any(|name| used.iter().any(|t| t.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == name)))
    })
}

/// `(a, b[, c])` split at its top-level commas (the spec parser's splitter).
fn tuple_parts(text: &str) -> Option<Vec<String>> {
    let inner = text.strip_prefix('(')?.strip_suffix(')')?;
    let parts: Vec<String> =
        kernelpro_spec::split_top_level(inner).into_iter().map(|(_, p)| p.trim().to_string()).collect();
    (parts.len() >= 2).then_some(parts)
}

/// The largest block, per dimension and in all (every GPU since compute capability 2.0).
const MAX_BLOCK: [u32; 3] = [1024, 1024, 64];
const MAX_BLOCK_THREADS: u64 = 1024;
/// The largest grid, per dimension.
const MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];
/// Shared memory a block may use on sm_90 (227 KiB, dynamic opted in; static at most 48 KiB).
const MAX_SHARED_BYTES: u64 = 227 * 1024;
/// 32-bit registers of one SM (every architecture since sm_50).
const SM_REGISTERS: u64 = 64 * 1024;

/// Why the launches the spec of `kernel` in `source` may pick cannot run on the target, if any:
/// a block over 1024 threads or a dimension's limit, a grid dimension past its limit, more threads
/// than the kernel's own `__launch_bounds__`, dynamic plus static shared memory over the
/// architecture's limit, or (with `registers`, per thread from ptxas) more registers than an SM has.
pub(crate) fn launch_limits(source: &str, kernel: &str, registers: Option<u32>) -> Result<(), String> {
    let Some(k) = Kernel::find(source, kernel) else { return Ok(()) };
    if k.spec_lines().is_empty() {
        return Ok(());
    }
    // A spec that no longer resolves (the spec checks the limits too) would fail before the GPU.
    let Some(launches) = k.all_launches().or_else(|| k.launch().map(|l| vec![l])) else {
        return Err("the launch spec does not resolve".into());
    };
    let bound: Option<u64> = k.launch_bounds().and_then(|b| source[b.max_threads.bytes].trim().parse().ok());
    let static_shared = static_shared_bytes(&k);
    for l in &launches {
        let threads: u64 = l.block.iter().map(|&d| d as u64).product();
        for axis in 0..3 {
            if l.block[axis] == 0 || l.block[axis] > MAX_BLOCK[axis] {
                return Err(format!("block dimension {} is {} (limit {})", axis, l.block[axis], MAX_BLOCK[axis]));
            }
            if l.grid[axis] == 0 || l.grid[axis] > MAX_GRID[axis] {
                return Err(format!("grid dimension {} is {} (limit {})", axis, l.grid[axis], MAX_GRID[axis]));
            }
        }
        if threads > MAX_BLOCK_THREADS {
            return Err(format!("a block of {threads} threads (limit {MAX_BLOCK_THREADS})"));
        }
        if let Some(b) = bound.filter(|b| threads > *b) {
            return Err(format!("a block of {threads} threads over the kernel's __launch_bounds__({b})"));
        }
        let shared = l.smem as u64 + static_shared;
        if shared > MAX_SHARED_BYTES {
            return Err(format!("{shared} bytes of shared memory a block (limit {MAX_SHARED_BYTES})"));
        }
        if let Some(r) = registers {
            // Registers are allocated per warp in units of 256.
            let per_warp = (r as u64 * 32).div_ceil(256) * 256;
            let need = per_warp * threads.div_ceil(32);
            if need > SM_REGISTERS {
                return Err(format!("{r} registers a thread × {threads} threads exceed the SM's {SM_REGISTERS}"));
            }
        }
    }
    Ok(())
}

fn within_device_limits(source: &str, kernel: &str) -> Result<(), String> {
    launch_limits(source, kernel, None)
}

/// Bytes of the kernel body's `__shared__` arrays whose sizes are literals (`__shared__ float s[32][33];`),
/// counted as 4-byte elements unless the type says 8 (`double`, `long long`, `float2`) or 16 (`float4`).
fn static_shared_bytes(k: &Kernel) -> u64 {
    let body = k.text_of(k.body());
    let mut total = 0u64;
    for decl in body.split(';') {
        let Some((_, rest)) = decl.split_once("__shared__") else { continue };
        if rest.contains("extern") || decl.contains("extern") {
            continue;
        }
        let elem: u64 = if rest.contains("float4") || rest.contains("double2") || rest.contains("int4") {
            16
        } else if rest.contains("double") || rest.contains("long long") || rest.contains("float2") {
            8
        } else if rest.contains("half") || rest.contains("short") {
            2
        } else if rest.contains("char") {
            1
        } else {
            4
        };
        let mut count = 1u64;
        let mut any = false;
        for part in rest.split('[').skip(1) {
            let Some(n) = part.split(']').next().and_then(|n| n.trim().parse::<u64>().ok()) else { continue };
            count = count.saturating_mul(n);
            any = true;
        }
        if any {
            total = total.saturating_add(count.saturating_mul(elem));
        }
    }
    total
}
