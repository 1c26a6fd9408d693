//! The recipes, one per module.

mod coarse_reduce;
mod float_literals;
mod interchange;
mod launch_bounds;
mod ldg;
mod pad_shared;
mod privatize;
mod restrict;
mod tiling;
mod tune;
mod unroll;
mod vectorize;
mod warp_reduce;
mod warp_rows;

pub use coarse_reduce::CoarsenReduce;
pub use float_literals::FloatLiterals;
pub use interchange::LoopInterchange;
pub use launch_bounds::LaunchBounds;
pub use ldg::Ldg;
pub use pad_shared::PadSharedTile;
pub use privatize::PrivatizeAtomics;
pub use restrict::RestrictConst;
pub use tiling::SharedTiling;
pub use tune::TuneParameter;
pub use unroll::PragmaUnroll;
pub use vectorize::VectorizeLoads;
pub use warp_reduce::WarpShuffleReduce;
pub use warp_rows::WarpRows;

use crate::Recipe;

/// Every built-in recipe, cheapest and safest first.
pub fn all() -> Vec<Box<dyn Recipe>> {
    vec![
        Box::new(TuneParameter),
        Box::new(FloatLiterals),
        Box::new(RestrictConst),
        Box::new(Ldg),
        Box::new(PragmaUnroll),
        Box::new(LaunchBounds),
        Box::new(PadSharedTile),
        Box::new(VectorizeLoads),
        Box::new(WarpShuffleReduce),
        Box::new(SharedTiling),
        Box::new(LoopInterchange),
        Box::new(PrivatizeAtomics),
        Box::new(CoarsenReduce),
        Box::new(WarpRows),
    ]
}
