//! Structural rewrites: each recognises the kernel's parallel pattern from
//! what its threads touch (the work units, their guard and the per-unit body,
//! as [`kernelpro_source::units`] reads them; [`units_text`] writes them) and
//! generates the expert form for it, carrying the user's own per-element
//! statements, names and types over. Every generated kernel
//! walks its work units with a grid stride, so it is correct under the user's
//! old launch as well as under the launches [`launch`] proposes.
//!
//! - [`WarpUnits`]: a thread walking a long loop per unit (row reductions and
//!   the maps after them, gathers, dot products along a contiguous axis)
//!   becomes a warp per unit, lanes splitting the loop, accumulators combined
//!   by shuffle all-reductions.
//! - [`BlockUnits`]: the same with a block per unit, for few long units.
//! - [`ClusterUnits`]: the same with a thread-block cluster per unit (sm_90), for fewer units than
//!   SMs, blocks combined through distributed shared memory.
//! - [`HoistRowWork`]: a thread per element whose first statements depend on
//!   the row alone (each thread recomputing its row's max and sum, in helpers
//!   or not) does them once per row, helpers inlined, then as WarpUnits/BlockUnits.
//! - [`ColumnUnits`]: a thread per unit whose loop already reads coalesced
//!   across threads (a sum down the middle axis) keeps 32 neighbouring units
//!   on a block's lanes and splits each unit's loop across its warps.
//! - [`BlockReduce`]: one atomic per element into one address becomes a
//!   grid-stride sum, warp shuffles, shared memory and one atomic per block.
//! - [`TiledContraction`]: a dot-product loop per output becomes a SIMT
//!   register-tiled product with shared-memory tiles, in any layout, with the
//!   user's epilogue.
//! - [`TiledTranspose`]: a thread-per-element copy whose load and store run
//!   along different indices goes through a 32x33 shared tile.
//! - [`PrivateHistogram`]: one atomic per unit into a data-chosen bin becomes
//!   per-block bins in shared memory and one atomic per bin per block.
//! - [`ShuffleTree`]: an interleaved shared-memory tree reduction per block
//!   becomes warp shuffles and one shared slot per warp.
//! - [`SegmentWarps`]: the same tree when its root is the block's own output
//!   (`out[blockIdx.x]`): a warp sums each block's segment, lanes splitting it.
//! - [`StencilTile`]: a 1D stencil or a 2D window reads its input through a shared tile with a halo.
//! - [`WindowTile`]: a 2D window over a batch of images, its bounds clamped to the image or not,
//!   reads its input through one image's shared tile with a halo, several outputs per thread.
//! - [`BlockScan`]: a Kogge–Stone block scan in shared memory becomes warp shuffles and one
//!   scan of the warp totals.
//! - [`WarpScan`]: a thread walking its row with a running sum stored at every
//!   element (a cumulative sum) becomes a warp per row scanning 32 elements at
//!   a time with shuffles.
//! - [`GridStrideMap`]: one element per thread becomes a grid-stride loop
//!   whose grid the launch tuner sizes to the machine.

mod block_scan;
mod column_units;
mod contraction;
mod flat_rows;
mod grid_stride;
mod histogram;
mod hoist;
mod launch;
mod register_acc;
mod scan;
mod sections;
mod simt_gemm;
mod stencil;
mod tile_rows;
mod transpose;
mod tree;
mod tree_atomic;
mod units_text;
mod warp_units;
mod welford;
mod window;

pub use block_scan::BlockScan;
pub use column_units::ColumnUnits;
pub use contraction::TiledContraction;
pub use grid_stride::{BlockReduce, GridStrideMap};
pub use histogram::PrivateHistogram;
pub use hoist::HoistRowWork;
pub(crate) use launch::SMS;
#[cfg(test)]
pub(crate) use launch::launch_limits;
pub use scan::WarpScan;
pub use stencil::StencilTile;
pub use transpose::TiledTranspose;
pub use tree::{SegmentWarps, ShuffleTree};
pub(crate) use warp_units::mentions;
pub use warp_units::{BlockUnits, ClusterUnits, WarpUnits};
pub use window::WindowTile;

/// The calling thread's index within its block, for any block shape.
const BLOCK_TID: &str = "(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))";
/// Threads per block.
const BLOCK_THREADS: &str = "(blockDim.x * blockDim.y * blockDim.z)";
/// The calling thread's index within the grid, 64-bit, for any grid and block shape.
const GRID_TID: &str = "(((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)))";
/// Threads in the grid, 64-bit.
const GRID_THREADS: &str = "((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)";

/// `f`'s rewrites of the kernel as the units recogniser reads it best: in its
/// canonical form ([`kernelpro_source::canonical::kernel`]), with a
/// flat index split by `/` and `%` read as a row and a column
/// ([`views::split_flat`]) where that gives any, else as written.
/// Then the same with the body's function-like macros expanded ([`views::expand_macros`]),
/// so subscripts a macro hides (`OUT(c, r) = IN(r, c)`) are seen; last, a
/// Welford recurrence per unit read as two passes ([`welford::two_pass`]) and a
/// block-partitioned walk as a grid-stride loop ([`sections::grid_stride`]) and a
/// loop over a tile's rows as a thread per element ([`tile_rows::one_per_element`]). The body's
/// `#pragma unroll` lines are left out of every view ([`views::without_pragmas`]).
fn with_units_view(
    text: &str,
    kernel: &str,
    f: impl Fn(&crate::kernel::Kernel) -> Vec<crate::Rewrite>,
) -> Vec<crate::Rewrite> {
    use crate::kernel::Kernel;
    use kernelpro_source::units::views;
    // Every structural recipe reads the same views of a text: built once per
    // `parse_once` scope (one node's expansion), not once per recipe.
    let views = kernelpro_source::parsed::memo("structural_units_views", text, kernel, || {
        // The kernel's canonical form first: style (brace/paren initialisers, `auto`, pointer walks, index
        // helpers) does not matter to any recogniser below.
        let canonical = kernelpro_source::canonical::kernel(text, kernel);
        let text = canonical.as_deref().unwrap_or(text);
        let unpragmaed = Kernel::find(text, kernel).and_then(|k| views::without_pragmas(&k));
        let text = unpragmaed.as_deref().unwrap_or(text);
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        let expanded = views::expand_macros(&k);
        // Each view with what a candidate made from it must add to its note.
        let mut out: Vec<(String, &'static str)> = Vec::new();
        // First, threads that all repeat their row's work as one unit per row ([`views::redundant_threads`]):
        // read as written, their units would be the repeated threads.
        out.extend(views::redundant_threads(&k).map(|v| (v, views::REDUNDANT_NOTE)));
        for t in std::iter::once(text).chain(expanded.as_deref()) {
            out.extend(Kernel::find(t, kernel).and_then(|k| views::split_flat(&k)).map(|v| (v, "")));
            out.push((t.to_string(), ""));
        }
        // Last, a per-unit Welford recurrence as two passes ([`welford::two_pass`]).
        out.extend(welford::two_pass(text, kernel).map(|v| (v, "")));
        // And a block-partitioned walk (each thread a section) as a grid-stride loop ([`sections::grid_stride`]).
        out.extend(sections::grid_stride(text, kernel).map(|v| (v, "")));
        // And a loop over a tile's rows as one thread per element ([`tile_rows::one_per_element`]).
        out.extend(tile_rows::one_per_element(text, kernel).map(|v| (v, "")));
        // Then other people's styles ([`views::all`]): a guard from an exact launch, index locals inlined, a
        // guard written twice, a Kahan sum; each read as written and split by `/` and `%`.
        for v in views::all(&k) {
            out.extend(Kernel::find(&v.text, kernel).and_then(|k| views::split_flat(&k)).map(|t| (t, v.note)));
            out.extend(tile_rows::one_per_element(&v.text, kernel).map(|t| (t, v.note)));
            out.push((v.text, v.note));
        }
        // Last, a sum kept in global memory read as one in a register ([`register_acc::in_register`]),
        // with the views above of that text.
        if let Some(r) = register_acc::in_register(text, kernel) {
            for v in Kernel::find(&r, kernel).map(|k| views::all(&k)).unwrap_or_default() {
                out.push((v.text, register_acc::NOTE));
            }
            out.push((r, register_acc::NOTE));
        }
        out
    });
    for (view, note) in &views {
        if let Some(k) = crate::kernel::Kernel::find(view, kernel) {
            let mut out = f(&k);
            if !out.is_empty() {
                if !note.is_empty() {
                    for rw in &mut out {
                        rw.note = format!("{}; {note}", rw.note);
                    }
                }
                return out;
            }
        }
    }
    Vec::new()
}

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod forms_tests;
#[cfg(test)]
mod gemm_tests;
#[cfg(test)]
mod scan_tests;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod window_tests;
