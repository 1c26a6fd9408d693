//! What a search returns, and how the best candidate is chosen.

use crate::evaluate::{Outcome, OutcomeKind};
use crate::memory::SearchMemory;
use crate::point::Point;
use crate::search::Event;
use crate::tree::{NodeId, Tree};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    Evaluations,
    Iterations,
    WallTime,
    Cancelled,
    /// No node could be expanded any more.
    Exhausted,
}

/// One rewrite on the path from the original to the best candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub node: NodeId,
    pub recipe: String,
    pub answers: Option<String>,
    /// The parameter point of the rewrite's form, when it offered several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<Point>,
    pub outcome: OutcomeKind,
    pub speedup: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeStats {
    pub nodes: usize,
    pub max_depth: usize,
    pub closed: usize,
    pub verified: usize,
    pub compile_errors: usize,
    pub wrong_outputs: usize,
    pub timeouts: usize,
    pub crashes: usize,
    /// Proposals whose normalized source was already tried: not re-evaluated.
    pub duplicates: usize,
    /// Proposals of a once-per-form recipe ([`crate::SearchConfig::once_per_form`])
    /// dropped: not at its form's best point, or already tried in that form.
    #[serde(default)]
    pub once_per_form_skipped: usize,
    /// Points dropped before compiling: their roofline lower bound could not beat the best verified time.
    #[serde(default)]
    pub pruned_by_prior: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchResult {
    /// The chosen candidate (never the original); `None` if none verified.
    pub best: Option<NodeId>,
    /// Its speedup over the original; 1.0 when there is none.
    pub best_speedup: f64,
    pub best_time_s: Option<f64>,
    pub best_energy_j: Option<f64>,
    pub baseline_time_s: f64,
    pub baseline_energy_j: Option<f64>,
    pub best_path: Vec<Step>,
    /// Candidate evaluations (the baseline run is not counted).
    pub evaluations: usize,
    pub iterations: usize,
    pub stop: StopReason,
    /// Candidates whose evaluation the stop cut short (the deadline or a
    /// cancel killed their compile or GPU job), by recipe: not recorded.
    #[serde(default)]
    pub unfinished: Vec<String>,
    pub stats: TreeStats,
    /// Seconds the proposers took (proposals and compile-ahead guesses): the
    /// search's own time between evaluations.
    #[serde(default)]
    pub propose_s: f64,
    pub tree: Tree,
    pub memory: SearchMemory,
    pub trace: Vec<Event>,
}

/// Speed first, energy second: among verified candidates whose time is within
/// noise of the fastest, the one with the lowest energy (the fastest if none
/// reports energy).
pub fn pick_best(tree: &Tree) -> Option<NodeId> {
    struct Timed {
        id: NodeId,
        time: f64,
        energy: Option<f64>,
        noise: f64,
    }
    let candidates: Vec<Timed> = tree
        .nodes()
        .iter()
        .skip(1)
        .filter_map(|n| match &n.outcome {
            Outcome::Ok { time_s, energy_j, noise, .. } => {
                Some(Timed { id: n.id, time: *time_s, energy: *energy_j, noise: *noise })
            }
            _ => None,
        })
        .collect();
    let fastest = candidates.iter().min_by(|a, b| a.time.total_cmp(&b.time).then(a.id.cmp(&b.id)))?;
    let frugal = candidates
        .iter()
        .filter(|c| c.time <= fastest.time + c.noise.max(fastest.noise))
        .filter_map(|c| Some((c.energy?, c)))
        .min_by(|(ea, a), (eb, b)| ea.total_cmp(eb).then(a.time.total_cmp(&b.time)).then(a.id.cmp(&b.id)));
    Some(frugal.map_or(fastest.id, |(_, c)| c.id))
}

/// The rewrites from the original to `best`: a node whose child on the path is another point of
/// its form is left out (the child replaces its point, it is no rewrite of its text).
pub(crate) fn best_path(tree: &Tree, best: NodeId) -> Vec<Step> {
    let path = tree.path(best);
    path.iter()
        .enumerate()
        .skip(1)
        .filter(|(i, _)| path.get(i + 1).is_none_or(|next| !tree[*next].alternative))
        .map(|(_, &id)| {
            let n = &tree[id];
            Step {
                node: id,
                recipe: n.recipe.clone(),
                answers: n.answers.clone(),
                point: n.point.clone(),
                outcome: n.outcome.kind(),
                speedup: n.speedup,
            }
        })
        .collect()
}

pub(crate) fn stats(tree: &Tree, duplicates: usize, once_per_form_skipped: usize, pruned_by_prior: usize) -> TreeStats {
    let mut s =
        TreeStats { nodes: tree.len(), duplicates, once_per_form_skipped, pruned_by_prior, ..TreeStats::default() };
    for n in tree.nodes() {
        s.max_depth = s.max_depth.max(n.depth);
        s.closed += n.closed as usize;
        match n.outcome.kind() {
            OutcomeKind::Ok => s.verified += 1,
            OutcomeKind::CompileError => s.compile_errors += 1,
            OutcomeKind::WrongOutput => s.wrong_outputs += 1,
            OutcomeKind::Timeout => s.timeouts += 1,
            OutcomeKind::Crash => s.crashes += 1,
        }
    }
    s
}
