//! Search settings. Defaults follow the paper: 30 iterations of 2 candidates,
//! UCT with c = sqrt(2), widening k = 1 and alpha = 0.5, dead ends after 3 misses.

use crate::reward::Rewards;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// UCT selection with progressive widening.
    Mcts,
    /// Always expand the fastest node so far (baseline).
    Greedy,
    /// Expand a uniformly random node (baseline).
    Random,
}

/// How a node's value summarizes its subtree's rewards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backup {
    Mean,
    Max,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Candidate evaluations; the original's baseline run is not counted.
    pub max_evaluations: usize,
    /// Iterations (select + expand); bounds runs where proposals are all duplicates.
    pub max_iterations: usize,
    pub wall_time: Option<Duration>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { max_evaluations: 60, max_iterations: 90, wall_time: None }
    }
}

/// Progressive widening: a node may have at most ceil(k * visits^alpha) children.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Widening {
    pub k: f64,
    pub alpha: f64,
    /// k is multiplied by this at nodes faster than their parent and at the best node (the root
    /// until a candidate beats it). Once the root has a faster child it widens at the plain rate,
    /// so the search goes deeper instead of measuring more near-equal launch variants of one
    /// rewrite (on the H100 corpus run its 3 to 8 evaluations were spent on those).
    pub wide_factor: f64,
    /// Children a failed node may have: attempts to fix it.
    pub debug_children: usize,
}

impl Default for Widening {
    fn default() -> Self {
        Widening { k: 1.0, alpha: 0.5, wide_factor: 2.0, debug_children: 1 }
    }
}

/// Dead-end pruning: when a (non-root) node is closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pruning {
    /// Consecutive children that failed, did not beat the node, or were duplicates.
    pub max_misses: u32,
    /// Closed when the best verified descendant is slower than this fraction of the node...
    pub regress_ratio: f64,
    /// ...once it has at least this many verified descendants.
    pub regress_min_descendants: u32,
}

impl Default for Pruning {
    fn default() -> Self {
        Pruning { max_misses: 3, regress_ratio: 0.9, regress_min_descendants: 2 }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchConfig {
    pub strategy: Strategy,
    pub seed: u64,
    pub budget: Budget,
    pub candidates_per_iteration: usize,
    /// UCT exploration constant.
    pub exploration: f64,
    pub widening: Widening,
    pub pruning: Pruning,
    pub rewards: Rewards,
    pub backup: Backup,
    /// Recipes (by name) applied once per form, at that form's best point: the
    /// micro rewrites (`RestrictConst`, `LaunchBounds`, `Ldg`, `PragmaUnroll`),
    /// which otherwise are re-tried at every node. A node's form is the
    /// sequence of the other recipes on its path from the root (launch variants
    /// of one structural rewrite share it); such a recipe is proposed only at
    /// the form's fastest verified node, and only once in that form.
    #[serde(default)]
    pub once_per_form: Vec<String>,
    /// Drop parameter points whose roofline lower bound cannot beat the best verified time
    /// ([`crate::Tag::hopeless`]); off where the times are not real (a stub evaluator), where the
    /// bounds still order the points.
    #[serde(default = "yes")]
    pub prior_pruning: bool,
}

fn yes() -> bool {
    true
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            strategy: Strategy::Mcts,
            seed: 0,
            budget: Budget::default(),
            candidates_per_iteration: 2,
            exploration: std::f64::consts::SQRT_2,
            widening: Widening::default(),
            pruning: Pruning::default(),
            rewards: Rewards::default(),
            backup: Backup::Mean,
            once_per_form: Vec::new(),
            prior_pruning: true,
        }
    }
}
