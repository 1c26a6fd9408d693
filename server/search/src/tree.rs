//! The search tree: one node per evaluated candidate, with its statistics and
//! the widening and pruning rules that decide where it may grow.

use crate::config::{Backup, SearchConfig};
use crate::evaluate::Outcome;
use crate::point::Point;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeId(pub usize);

impl NodeId {
    pub const ROOT: NodeId = NodeId(0);
}

/// One evaluated candidate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Node {
    pub id: NodeId,
    pub parent: Option<NodeId>,
    pub depth: usize,
    pub source: String,
    /// The rewrite that produced it from its parent (`original` at the root).
    pub recipe: String,
    pub answers: Option<String>,
    /// The parameter point of its form, when the rewrite offered several.
    #[serde(default)]
    pub point: Option<Point>,
    /// Another point of its parent's form (not a rewrite of the parent's text):
    /// it shares the parent's form.
    #[serde(default)]
    pub alternative: bool,
    pub outcome: Outcome,
    /// Over the original; `None` when it failed.
    pub speedup: Option<f64>,
    pub reward: f64,
    pub visits: u32,
    pub value_sum: f64,
    pub value_max: f64,
    pub children: Vec<NodeId>,
    /// A dead end: neither it nor its subtree is expanded any more.
    pub closed: bool,
    /// It takes no more children (proposer out of ideas, too many misses, or a
    /// failed node that had its debug children), but its subtree may still grow.
    pub exhausted: bool,
    /// Consecutive children that failed, did not beat this node, or were duplicates.
    pub misses: u32,
    /// Verified candidates below this node.
    pub verified_descendants: u32,
    /// Best speedup below this node (0 while none verified).
    pub best_descendant: f64,
}

impl Node {
    pub fn failed(&self) -> bool {
        self.speedup.is_none()
    }

    /// Faster than its parent (never the root: it is wide only while it is the best).
    pub fn improved(&self, tree: &Tree) -> bool {
        match (self.parent, self.speedup) {
            (Some(p), Some(s)) => tree[p].speedup.is_some_and(|ps| s > ps),
            _ => false,
        }
    }
}

/// A candidate's evaluation, about to become a node.
pub(crate) struct Evaluated {
    pub source: String,
    pub recipe: String,
    pub answers: Option<String>,
    pub point: Option<Point>,
    pub alternative: bool,
    pub outcome: Outcome,
    pub speedup: Option<f64>,
    pub reward: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Tree {
    nodes: Vec<Node>,
}

impl std::ops::Index<NodeId> for Tree {
    type Output = Node;
    fn index(&self, id: NodeId) -> &Node {
        &self.nodes[id.0]
    }
}

impl Tree {
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Ancestors from the root down to `id`, inclusive.
    pub fn path(&self, id: NodeId) -> Vec<NodeId> {
        let mut path = vec![id];
        while let Some(p) = self[*path.last().unwrap()].parent {
            path.push(p);
        }
        path.reverse();
        path
    }

    /// Adds a node and backs its reward up to the root.
    pub(crate) fn add(&mut self, parent: Option<NodeId>, evaluated: Evaluated) -> NodeId {
        let Evaluated { source, recipe, answers, point, alternative, outcome, speedup, reward } = evaluated;
        let id = NodeId(self.nodes.len());
        let depth = parent.map_or(0, |p| self[p].depth + 1);
        self.nodes.push(Node {
            id,
            parent,
            depth,
            source,
            recipe,
            answers,
            point,
            alternative,
            outcome,
            speedup,
            reward,
            visits: 1,
            value_sum: reward,
            value_max: reward,
            children: Vec::new(),
            closed: false,
            exhausted: false,
            misses: 0,
            verified_descendants: 0,
            best_descendant: 0.0,
        });
        if let Some(p) = parent {
            self.nodes[p.0].children.push(id);
            let mut up = parent;
            while let (Some(a), Some(s)) = (up, speedup) {
                let node = &mut self.nodes[a.0];
                node.verified_descendants += 1;
                node.best_descendant = node.best_descendant.max(s);
                up = node.parent;
            }
            self.backup(p, reward);
        }
        id
    }

    /// Adds `reward` as one more visit of `from` and each of its ancestors.
    pub(crate) fn backup(&mut self, from: NodeId, reward: f64) {
        let mut up = Some(from);
        while let Some(a) = up {
            let node = &mut self.nodes[a.0];
            node.visits += 1;
            node.value_sum += reward;
            node.value_max = node.value_max.max(reward);
            up = node.parent;
        }
    }

    pub(crate) fn close(&mut self, id: NodeId) {
        self.nodes[id.0].closed = true;
    }

    /// The node's value as UCT sees it.
    pub fn value(&self, id: NodeId, backup: Backup) -> f64 {
        let node = &self[id];
        match backup {
            Backup::Mean => node.value_sum / node.visits as f64,
            Backup::Max => node.value_max,
        }
    }

    /// How many children the node may have now: ceil(k * visits^alpha), with k
    /// widened at the root and at improving or best nodes; a failed node only
    /// gets its debug children.
    pub fn child_limit(&self, id: NodeId, config: &SearchConfig, best_speedup: f64) -> usize {
        let node = &self[id];
        let w = &config.widening;
        if node.failed() {
            return w.debug_children;
        }
        let wide = node.improved(self) || node.speedup.is_some_and(|s| s >= best_speedup);
        let k = if wide { w.k * w.wide_factor } else { w.k };
        ((k * (node.visits as f64).powf(w.alpha)).ceil() as usize).max(1)
    }

    /// Whether the node may take a child now or after more visits.
    pub fn can_widen(&self, id: NodeId, config: &SearchConfig) -> bool {
        !self[id].failed() && !self[id].exhausted && config.widening.alpha > 0.0
    }

    /// Whether the node may take a child now.
    pub fn expandable(&self, id: NodeId, config: &SearchConfig, best_speedup: f64) -> bool {
        let node = &self[id];
        !node.closed && !node.exhausted && node.children.len() < self.child_limit(id, config, best_speedup)
    }

    pub(crate) fn mark_exhausted(&mut self, id: NodeId) {
        self.nodes[id.0].exhausted = true;
    }

    /// Counts a child attempt of `parent` (`None`: nothing new was proposed)
    /// and applies the dead-end rules. A node stops taking children (exhausted)
    /// after `max_misses` misses in a row or once a failed node has its debug
    /// children; a node whose verified descendants all regressed is closed with
    /// its subtree. The root is exempt: a long run of failures must not end the
    /// search. Returns the nodes it closed.
    pub(crate) fn record_attempt(
        &mut self,
        parent: NodeId,
        child: Option<NodeId>,
        config: &SearchConfig,
    ) -> Vec<NodeId> {
        let hit = child.is_some_and(|c| match (self[c].speedup, self[parent].speedup) {
            (Some(s), Some(ps)) => s > ps,
            (Some(_), None) => true, // a fixed failure is progress
            _ => false,
        });
        let p = &config.pruning;
        let node = &mut self.nodes[parent.0];
        node.misses = if hit { 0 } else { node.misses + 1 };
        let failed_out = node.speedup.is_none() && node.children.len() >= config.widening.debug_children;
        if node.parent.is_some() && (failed_out || node.misses >= p.max_misses) {
            node.exhausted = true;
        }

        let closed: Vec<NodeId> = self
            .path(parent)
            .into_iter()
            .skip(1)
            .filter(|&id| {
                let node = &self[id];
                !node.closed
                    && node.verified_descendants >= p.regress_min_descendants
                    && node.speedup.is_some_and(|s| node.best_descendant < p.regress_ratio * s)
            })
            .collect();
        for &id in &closed {
            self.close(id);
        }
        closed
    }
}
