//! The recipes, one per module.

mod coarse_reduce;
mod float_literals;
mod interchange;
mod launch_bounds;
mod ldg;
mod pad_shared;
mod prefetch;
mod privatize;
mod restrict;
mod row_cache;
mod specialize;
mod tiling;
mod tune;
mod unroll;
mod vectorize;
pub(crate) mod warp_reduce;
mod warp_rows;

pub use coarse_reduce::CoarsenReduce;
pub use float_literals::FloatLiterals;
pub use interchange::LoopInterchange;
pub use launch_bounds::LaunchBounds;
pub use ldg::Ldg;
pub use pad_shared::PadSharedTile;
pub use prefetch::PrefetchL2;
pub use privatize::PrivatizeAtomics;
pub use restrict::RestrictConst;
pub use row_cache::RowInRegisters;
pub use specialize::SpecializeScalars;
pub use tiling::SharedTiling;
pub use tune::TuneParameter;
pub use unroll::PragmaUnroll;
pub use vectorize::VectorizeLoads;
pub use warp_reduce::WarpShuffleReduce;
pub use warp_rows::WarpRows;

use crate::Recipe;
use crate::structural::{
    BlockReduce, BlockScan, BlockUnits, ClusterUnits, ColumnUnits, GridStrideMap, HoistRowWork, PrivateHistogram,
    SegmentWarps, ShuffleTree, StencilTile, TiledContraction, TiledTranspose, WarpScan, WarpUnits, WindowTile,
};

/// Every built-in recipe. The structural rewrites come first (the kernel's
/// parallel pattern recognised from what its threads touch, rewritten into
/// the expert form with launch variants: `crate::structural`). Within the recipes answering one finding (and
/// when there are no findings) this is the order they are tried in: the
/// launch tuning and FP64 fix, then the structural rewrites that change how
/// threads map to data (where the large wins are: 3-80x on the benchmark
/// suite), then the micro-optimizations worth a few percent. Every candidate
/// is verified, so order only decides what a small budget reaches.
pub fn all() -> Vec<Box<dyn Recipe>> {
    vec![
        // Where each element's thread redoes its row's work, doing it once per row comes first.
        Box::new(HoistRowWork),
        // BlockUnits applies only to few long rows, where it beats a warp per row.
        Box::new(BlockUnits),
        // Fewer rows than SMs: a cluster of blocks per row.
        Box::new(ClusterUnits),
        Box::new(WarpUnits),
        Box::new(WarpScan),
        Box::new(ColumnUnits),
        Box::new(TiledContraction),
        Box::new(BlockReduce),
        Box::new(PrivateHistogram),
        Box::new(ShuffleTree),
        Box::new(SegmentWarps),
        Box::new(StencilTile),
        Box::new(WindowTile),
        Box::new(BlockScan),
        Box::new(TiledTranspose),
        Box::new(GridStrideMap),
        Box::new(TuneParameter),
        Box::new(FloatLiterals),
        Box::new(LoopInterchange),
        Box::new(RowInRegisters),
        Box::new(SpecializeScalars),
        Box::new(WarpRows),
        Box::new(PrivatizeAtomics),
        Box::new(CoarsenReduce),
        Box::new(SharedTiling),
        Box::new(PadSharedTile),
        Box::new(PrefetchL2),
        Box::new(WarpShuffleReduce),
        Box::new(VectorizeLoads),
        Box::new(RestrictConst),
        Box::new(Ldg),
        Box::new(PragmaUnroll),
        Box::new(LaunchBounds),
    ]
}
