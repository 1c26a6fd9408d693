//! Which node to expand next, per strategy.

use crate::config::{SearchConfig, Strategy};
use crate::rng::SplitMix64;
use crate::tree::{NodeId, Tree};

/// The node to expand and how many children it may take now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Selection {
    pub node: NodeId,
    pub slots: usize,
}

/// Picks the next node; `None` when nothing can be expanded. Nodes found to be
/// exhausted on the way are closed and appended to `closed`.
pub(crate) fn select(
    tree: &mut Tree,
    config: &SearchConfig,
    best_speedup: f64,
    rng: &mut SplitMix64,
    closed: &mut Vec<NodeId>,
) -> Option<Selection> {
    match config.strategy {
        Strategy::Mcts => uct(tree, config, best_speedup, closed),
        Strategy::Greedy => {
            let fastest = tree
                .nodes()
                .iter()
                .filter(|n| !n.closed && !n.exhausted && !n.failed())
                .max_by(|a, b| a.speedup.partial_cmp(&b.speedup).unwrap().then(b.id.cmp(&a.id)))?;
            Some(Selection { node: fastest.id, slots: config.candidates_per_iteration })
        }
        Strategy::Random => {
            let open: Vec<NodeId> = tree.nodes().iter().filter(|n| !n.closed && !n.exhausted).map(|n| n.id).collect();
            if open.is_empty() {
                return None;
            }
            let node = open[rng.below(open.len())];
            Some(Selection { node, slots: baseline_slots(tree, node, config) })
        }
    }
}

/// Baselines ignore widening, but a failed node still only gets its debug children.
fn baseline_slots(tree: &Tree, node: NodeId, config: &SearchConfig) -> usize {
    if tree[node].failed() {
        config.widening.debug_children.saturating_sub(tree[node].children.len())
    } else {
        config.candidates_per_iteration
    }
}

/// Descends from the root by UCT until a node whose widening limit leaves room.
fn uct(tree: &mut Tree, config: &SearchConfig, best_speedup: f64, closed: &mut Vec<NodeId>) -> Option<Selection> {
    let mut v = NodeId::ROOT;
    loop {
        if tree[v].closed {
            return None; // only the root is reached closed
        }
        if tree.expandable(v, config, best_speedup) {
            let slots = tree.child_limit(v, config, best_speedup) - tree[v].children.len();
            return Some(Selection { node: v, slots });
        }
        let open: Vec<NodeId> = tree[v].children.iter().copied().filter(|&c| !tree[c].closed).collect();
        if open.is_empty() {
            if tree.can_widen(v, config) {
                // Every child is a dead end: count a visit of the node itself
                // until its widening limit makes room for a new child.
                tree.backup(v, tree[v].reward);
                continue;
            }
            if v == NodeId::ROOT {
                return None;
            }
            tree.close(v);
            closed.push(v);
            v = NodeId::ROOT;
            continue;
        }
        let ln_n = (tree[v].visits as f64).ln();
        let score =
            |c: NodeId| tree.value(c, config.backup) + config.exploration * (ln_n / tree[c].visits as f64).sqrt();
        // Ties go to the older child, so runs are reproducible.
        v = open.iter().copied().fold(open[0], |best, c| if score(c) > score(best) { c } else { best });
    }
}
