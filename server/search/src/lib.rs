//! Monte Carlo tree search over kernel source versions.
//!
//! Pure and deterministic for a seed: no GPU, no LSP, no I/O. A node is one
//! evaluated candidate; edges are rewrites from a [`Proposer`]; an [`Evaluator`]
//! compiles, verifies and times each candidate. MCTS (UCT over log-speedup
//! rewards, progressive widening, asymmetric branching, dead-end pruning,
//! search memory) and the greedy and random baselines share one loop. A
//! rewrite's variants are the parameter points of one form ([`Point`]), searched
//! as a node's children and ordered and pruned by a roofline prior ([`Tag`]).
#![forbid(unsafe_code)]

mod combine;
mod config;
mod evaluate;
mod memory;
mod point;
mod proposer;
mod result;
mod reward;
mod rng;
mod search;
mod select;
pub mod synthetic;
mod tree;

pub use combine::{ByFindings, RoundRobin};
pub use config::{Backup, Budget, Pruning, SearchConfig, Strategy, Widening};
pub use evaluate::{Evaluator, FindingNote, Outcome, OutcomeKind};
pub use memory::{MemoryEntry, SearchMemory, candidate_id, normalize, source_hash};
pub use point::{Point, Tag};
pub use proposer::{Proposal, ProposeContext, Proposer};
pub use result::{SearchResult, Step, StopReason, TreeStats, pick_best};
pub use reward::Rewards;
pub use rng::SplitMix64;
pub use search::{Event, Progress, Search, SearchError};
pub use tree::{Node, NodeId, Tree};
