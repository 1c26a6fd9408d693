//! Built-in rewrite recipes for the kernel optimizer.
//!
//! Each [`Recipe`] rewrites one kernel of a whole `.cu` file through
//! tree-sitter node ranges and returns whole new file texts. Recipes obey the
//! optimizer contract: they edit only the kernel's body and qualifiers and the
//! order of `tune` values; parameter names, order and types, other spec lines,
//! other kernels and host code are left alone. [`RecipeProposer`] puts them
//! behind the search's [`Proposer`](kernelpro_search::Proposer) trait.
#![forbid(unsafe_code)]

mod access;
mod coarsen;
mod edit;
mod fresh;
mod kernel;
mod points;
mod proposer;
mod recipes;
mod structural;
mod syntax;
mod why_not;

pub use fresh::FreshNames;
pub use proposer::RecipeProposer;
pub use recipes::{
    CoarsenReduce, FloatLiterals, LaunchBounds, Ldg, LoopInterchange, PadSharedTile, PragmaUnroll, PrefetchL2,
    PrivatizeAtomics, RestrictConst, RowInRegisters, SharedTiling, SpecializeScalars, TuneParameter, VectorizeLoads,
    WarpRows, WarpShuffleReduce, all,
};
pub use structural::{
    BlockReduce, BlockScan, BlockUnits, ClusterUnits, ColumnUnits, GridStrideMap, HoistRowWork, PrivateHistogram,
    SegmentWarps, ShuffleTree, StencilTile, TiledContraction, TiledTranspose, WarpScan, WarpUnits, WindowTile,
};
pub use why_not::{NotApplicable, PromiseStatus, WhyNot, explain, promise_status, promised, why_not};

pub use kernelpro_model::Code;
use serde::Serialize;

/// One rewritten file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rewrite {
    /// The whole new file text.
    pub source: String,
    /// What changed, in a few words (shown in the search's best path).
    pub note: String,
}

/// How deep a change a rewrite makes. At a node's expansion every structural
/// candidate is proposed before the other rewrites, and those before the
/// micro-optimizations: a few percent from `__restrict__` or an unroll is
/// worth trying on top of the right structure, not instead of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Tier {
    /// The kernel's parallel pattern rewritten into its expert form (with launch variants).
    Structural,
    Rewrite,
    /// Qualifiers, hints and pragmas.
    Micro,
}

/// A built-in rewrite of one kernel.
pub trait Recipe {
    fn name(&self) -> &'static str;
    /// Declared by every recipe (no default): a new structural rewrite must say so.
    fn tier(&self) -> Tier;
    /// The finding codes (static and profile tools, from the registry in
    /// `kernelpro_model::CODES`) whose problem this rewrite addresses.
    fn answers(&self) -> &'static [Code];
    /// The parallel patterns (the kernel model's) this rewrite is the expert form of: within a
    /// tier, a kernel's own pattern's rewrites are proposed first (a GEMM's tiles before a warp
    /// per output).
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[]
    }
    /// The oldest SM version (90 for `sm_90`) nvcc compiles this recipe's rewrites for: thread-block
    /// clusters need Hopper. A search for an older `arch` leaves the recipe out rather than try
    /// candidates that cannot compile.
    fn min_sm(&self) -> u32 {
        0
    }
    /// Every rewrite this recipe offers for `kernel`; empty when it does not apply.
    fn rewrite(&self, file_text: &str, kernel: &str) -> Vec<Rewrite>;
    fn applies(&self, file_text: &str, kernel: &str) -> bool {
        !self.rewrite(file_text, kernel).is_empty()
    }
    /// Every rewrite, or why there is none: the fact of the kernel that blocked this recipe, in
    /// words ("the loop-carried value `mean` is updated by a recurrence with no known combine").
    /// Generated names never collide with the file's ([`FreshNames`]).
    fn attempt(&self, file_text: &str, kernel: &str) -> Result<Vec<Rewrite>, NotApplicable> {
        let out = fresh::with_fresh_names(file_text, kernel, |t| self.rewrite(t, kernel));
        if out.is_empty() { Err(self.not_applicable(file_text, kernel)) } else { Ok(out) }
    }
    /// Why this recipe has no rewrite of `kernel`; the default reads the blocking fact from the
    /// kernel model and its syntax (a recipe that knows better overrides it).
    fn not_applicable(&self, file_text: &str, kernel: &str) -> NotApplicable {
        why_not::reason(self.name(), self.answers(), file_text, kernel)
    }
}

#[cfg(test)]
mod sound_tests;
#[cfg(test)]
mod tests;
