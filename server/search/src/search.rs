//! The search loop shared by MCTS and the baselines: select, propose,
//! deduplicate, evaluate, back up, prune, until the budget or a cancel stops it.

use crate::config::SearchConfig;
use crate::evaluate::{Evaluator, Outcome, OutcomeKind};
use crate::memory::{SearchMemory, normalize, source_hash};
use crate::point::Point;
use crate::proposer::{Proposal, ProposeContext, Proposer};
use crate::result::{SearchResult, StopReason, best_path, pick_best, stats};
use crate::rng::SplitMix64;
use crate::select::select;
use crate::tree::{Evaluated, NodeId, Tree};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One step of the search, for progress reporting and the result's trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Event {
    Selected {
        iteration: usize,
        node: NodeId,
    },
    Proposed {
        node: NodeId,
        proposer: String,
        count: usize,
    },
    Evaluated {
        node: NodeId,
        parent: NodeId,
        recipe: String,
        outcome: OutcomeKind,
        speedup: Option<f64>,
    },
    /// A proposal whose normalized source was tried before, as `of`.
    Duplicate {
        parent: NodeId,
        recipe: String,
        of: NodeId,
    },
    Closed {
        node: NodeId,
    },
    /// A parameter point dropped before compiling: its roofline lower bound
    /// could not beat the best verified time.
    Pruned {
        parent: NodeId,
        recipe: String,
        point: Point,
        lower_bound_s: f64,
    },
    Stopped {
        reason: StopReason,
    },
}

/// What the progress callback sees after each event.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'e> {
    pub evaluations: usize,
    pub max_evaluations: usize,
    pub best_speedup: f64,
    pub event: &'e Event,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SearchError {
    /// The original did not compile, verify or run: there is nothing to compare against.
    Baseline(Outcome),
}

impl std::fmt::Display for SearchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SearchError::Baseline(o) => write!(f, "the original kernel failed: {:?}", o.kind()),
        }
    }
}

impl std::error::Error for SearchError {}

type ProgressCallback<'a> = Box<dyn FnMut(&Progress) + 'a>;

/// A configured search. `run` consumes it.
pub struct Search<'a> {
    config: SearchConfig,
    cancel: Option<Arc<AtomicBool>>,
    deadline: Option<Instant>,
    on_progress: Option<ProgressCallback<'a>>,
    memory: SearchMemory,
}

impl<'a> Search<'a> {
    pub fn new(config: SearchConfig) -> Self {
        Search { config, cancel: None, deadline: None, on_progress: None, memory: SearchMemory::default() }
    }

    /// Checked before every evaluation; setting it stops with the best so far.
    pub fn cancel_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// A point in time the search stops at (with [`StopReason::WallTime`]),
    /// checked before every evaluation and after every batch: outcomes of a
    /// batch the deadline cut short are recorded only where they verified (the
    /// caller's evaluator kills its work in flight at the deadline), the others
    /// are listed in [`SearchResult::unfinished`]. Unlike `budget.wall_time`
    /// (from the start of `run`), it can include work done before the search.
    pub fn deadline(mut self, at: Instant) -> Self {
        self.deadline = Some(at);
        self
    }

    pub fn on_progress(mut self, callback: impl FnMut(&Progress) + 'a) -> Self {
        self.on_progress = Some(Box::new(callback));
        self
    }

    /// Starts from an earlier search's memory (its node ids refer to that search).
    pub fn with_memory(mut self, memory: SearchMemory) -> Self {
        self.memory = memory;
        self
    }

    pub fn run(
        self,
        original: &str,
        proposer: &mut dyn Proposer,
        evaluator: &mut dyn Evaluator,
    ) -> Result<SearchResult, SearchError> {
        let started = Instant::now();
        let baseline = {
            let _span = tracing::debug_span!("search.baseline").entered();
            evaluator.evaluate(original)
        };
        tracing::debug!(
            outcome = ?baseline.kind(),
            time_s = baseline.time_s(),
            why = baseline.failure().map(brief),
            "baseline"
        );
        let (baseline_time_s, baseline_energy_j) = match &baseline {
            Outcome::Ok { time_s, energy_j, .. } => (*time_s, *energy_j),
            _ => return Err(SearchError::Baseline(baseline)),
        };
        let mut run = Run {
            config: &self.config,
            cancel: self.cancel,
            deadline: self.deadline,
            on_progress: self.on_progress,
            tree: Tree::default(),
            memory: self.memory,
            trace: Vec::new(),
            rng: SplitMix64::new(self.config.seed),
            started,
            baseline_time_s,
            evaluations: 0,
            iterations: 0,
            duplicates: 0,
            once_per_form_skipped: 0,
            pruned_by_prior: 0,
            once_done: HashSet::new(),
            points: HashMap::new(),
            form_rest: HashMap::new(),
            alternatives: HashSet::new(),
            unfinished: Vec::new(),
            deferred: Vec::new(),
            propose_time: Duration::ZERO,
            best: None,
            outcomes: HashMap::from([(normalize(original), baseline.clone())]),
        };
        run.memory.record(original, NodeId::ROOT, "original", None, &baseline, Some(1.0));
        run.tree.add(
            None,
            Evaluated {
                source: original.to_owned(),
                recipe: "original".into(),
                answers: None,
                point: None,
                alternative: false,
                outcome: baseline,
                speedup: Some(1.0),
                reward: 0.0,
            },
        );
        let stop = run.main_loop(proposer, evaluator);
        tracing::debug!(reason = ?stop, evaluations = run.evaluations, iterations = run.iterations, "search stopped");
        run.emit(Event::Stopped { reason: stop });

        let best = run.best;
        let best_outcome = best.map(|b| &run.tree[b].outcome);
        Ok(SearchResult {
            best,
            best_speedup: run.best_speedup(),
            best_time_s: best_outcome.and_then(Outcome::time_s),
            best_energy_j: best_outcome.and_then(|o| match o {
                Outcome::Ok { energy_j, .. } => *energy_j,
                _ => None,
            }),
            baseline_time_s,
            baseline_energy_j,
            best_path: best.map(|b| best_path(&run.tree, b)).unwrap_or_default(),
            evaluations: run.evaluations,
            iterations: run.iterations,
            stop,
            unfinished: run.unfinished,
            stats: stats(&run.tree, run.duplicates, run.once_per_form_skipped, run.pruned_by_prior),
            propose_s: run.propose_time.as_secs_f64(),
            tree: run.tree,
            memory: run.memory,
            trace: run.trace,
        })
    }
}

/// A failure's first line, at most 200 characters: the log's `why`.
fn brief(failure: &str) -> String {
    let line = failure.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim();
    match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

struct Run<'c, 'a> {
    config: &'c SearchConfig,
    cancel: Option<Arc<AtomicBool>>,
    deadline: Option<Instant>,
    on_progress: Option<ProgressCallback<'a>>,
    tree: Tree,
    memory: SearchMemory,
    trace: Vec<Event>,
    rng: SplitMix64,
    started: Instant,
    baseline_time_s: f64,
    evaluations: usize,
    iterations: usize,
    duplicates: usize,
    once_per_form_skipped: usize,
    /// (form, recipe) pairs of `config.once_per_form` recipes already tried.
    once_done: HashSet<(String, String)>,
    /// Tagged proposals dropped by their roofline prior.
    pruned_by_prior: usize,
    /// A form's other points, by the node its first point became: offered as that node's children.
    points: HashMap<NodeId, Vec<Proposal>>,
    /// A form's other points, by the source hash of its first point, until that one is recorded.
    form_rest: HashMap<u64, Vec<Proposal>>,
    /// Source hashes of proposals offered as another point of their parent's form.
    alternatives: HashSet<u64>,
    /// Recipes of candidates whose evaluation the stop cut short.
    unfinished: Vec<String>,
    /// Candidates whose slow compile was still running when their batch was
    /// evaluated ([`Evaluator::defer`]), with their parent: evaluated once compiled.
    deferred: Vec<(NodeId, Proposal)>,
    /// Time in the proposer (`propose` and `ahead`).
    propose_time: Duration,
    best: Option<NodeId>,
    /// Every outcome the evaluator returned, by normalized source: a batch-mate
    /// evaluated but not recorded (its parent was pruned by an earlier outcome
    /// of the batch) is not evaluated again when it is proposed later.
    outcomes: HashMap<String, Outcome>,
}

/// The most proposals a node is asked for at once when those it gave were all hopeless or evaluated.
const MAX_ASK: usize = 64;

impl Run<'_, '_> {
    fn main_loop(&mut self, proposer: &mut dyn Proposer, evaluator: &mut dyn Evaluator) -> StopReason {
        let stop = self.expand(proposer, evaluator);
        if matches!(stop, StopReason::WallTime | StopReason::Cancelled) {
            // Their compiles were still running.
            self.unfinished.extend(self.deferred.drain(..).map(|(_, p)| p.recipe));
        }
        stop
    }

    fn expand(&mut self, proposer: &mut dyn Proposer, evaluator: &mut dyn Evaluator) -> StopReason {
        loop {
            if let Some(reason) = self.out_of_budget() {
                return reason;
            }
            if let Some(reason) = self.run_deferred(evaluator, false) {
                return reason;
            }
            if self.iterations >= self.config.budget.max_iterations {
                return StopReason::Iterations;
            }
            self.iterations += 1;
            let _span = tracing::debug_span!("search.iteration", iteration = self.iterations).entered();
            let mut closed = Vec::new();
            let best_speedup = self.fastest_speedup();
            let selection = select(&mut self.tree, self.config, best_speedup, &mut self.rng, &mut closed);
            self.emit_closed(closed);
            let Some(selection) = selection else {
                if self.deferred.is_empty() {
                    return StopReason::Exhausted;
                }
                // Nothing else to try: wait for the slow compiles.
                if let Some(reason) = self.run_deferred(evaluator, true) {
                    return reason;
                }
                continue;
            };
            let node = selection.node;
            self.emit(Event::Selected { iteration: self.iterations, node });

            let wanted = selection
                .slots
                .min(self.config.candidates_per_iteration)
                .min(self.config.budget.max_evaluations - self.evaluations);
            // As many more as are still compiling: those are taken out below.
            let mut ask = wanted + self.deferred.len();
            let mut offered = 0;
            let mut proposals = loop {
                let proposing = Instant::now();
                let ctx = self.propose_context(node, ask);
                let mut proposals = {
                    let _span = tracing::debug_span!("search.propose", node = node.0).entered();
                    let proposals = proposer.propose(&ctx);
                    tracing::debug!(count = proposals.len(), wanted = ask, "proposed");
                    proposals
                };
                self.propose_time += proposing.elapsed();
                let more = proposals.len() > offered;
                offered = proposals.len();
                self.keep_once_per_form(node, &mut proposals);
                self.arrange_points(node, &mut proposals);
                self.set_aside_repeats(node, &mut proposals);
                // All it gave was hopeless or evaluated (a form's pruned points, asked for
                // first at every visit): its next forms are asked for, until it has no more.
                // Before, the node was taken for exhausted with forms it had not offered
                // (on the H100, 40_LayerNorm's root never offered ClusterUnits).
                if !proposals.is_empty() || !more || ask >= MAX_ASK || self.past_deadline() {
                    break proposals;
                }
                ask *= 2;
            };
            if !self.deferred.is_empty() && !proposals.is_empty() {
                // Those still compiling are evaluated once compiled, not in this batch.
                let deferred: HashSet<u64> = self.deferred.iter().map(|(_, p)| source_hash(&p.source)).collect();
                proposals.retain(|p| !deferred.contains(&source_hash(&p.source)));
                if proposals.is_empty() {
                    // Nothing here but what is still compiling: wait for it.
                    if let Some(reason) = self.run_deferred(evaluator, true) {
                        return reason;
                    }
                    continue;
                }
            }
            self.defer_slow(evaluator, node, &mut proposals, wanted);
            let later = proposals.split_off(wanted.min(proposals.len()));
            self.emit(Event::Proposed { node, proposer: proposer.name().to_owned(), count: proposals.len() });
            if proposals.is_empty() {
                let closed = self.tree.record_attempt(node, None, self.config);
                self.emit_closed(closed);
            }

            // The candidates are independent: evaluate the new ones together,
            // up to the evaluator's parallelism at a time, skipping sources the
            // memory knows and repeats within the iteration.
            let mut fresh_hashes = HashSet::new();
            let fresh: Vec<String> = proposals
                .iter()
                .map(|p| &p.source)
                .filter(|s| self.memory.lookup(s).is_none() && fresh_hashes.insert(source_hash(s)))
                .cloned()
                .collect();
            // What may be asked for next, compiled ahead while these are timed: the
            // node's later proposals, then (with an evaluator that has compile places
            // to spare) the first children of each candidate of this batch (the next
            // iteration expands one of them when it is faster) and more of this node's.
            let lookahead = evaluator.lookahead();
            let mut guesses: Vec<Proposal> = Vec::new();
            if lookahead > 0 && !fresh.is_empty() {
                // Their compiles run while the proposer guesses.
                evaluator.begin(&fresh.iter().map(String::as_str).collect::<Vec<_>>());
            }
            let guessing = Instant::now();
            if lookahead > 0 {
                let base = self.propose_context(node, self.config.candidates_per_iteration);
                for p in proposals.iter().filter(|p| fresh.contains(&p.source)) {
                    // Guesses only feed compiles ahead: none past the deadline (on the H100 a slow
                    // proposer's guesses kept a 45 s search going for 64 s).
                    if self.past_deadline() {
                        break;
                    }
                    let child = ProposeContext {
                        parent: NodeId(self.tree.len()),
                        source: &p.source,
                        depth: base.depth + 1,
                        findings: &[],
                        failure: None,
                        ..base
                    };
                    guesses.extend(proposer.ahead(&child));
                }
                if !self.past_deadline() {
                    guesses.extend(
                        proposer.ahead(&ProposeContext { wanted: proposals.len() + later.len() + lookahead, ..base }),
                    );
                }
            }
            let ahead: Vec<&str> = later
                .iter()
                .chain(&guesses)
                .map(|p| p.source.as_str())
                .filter(|s| self.memory.lookup(s).is_none() && fresh_hashes.insert(source_hash(s)))
                .take(later.len() + lookahead)
                .collect();
            if !ahead.is_empty() && !fresh.is_empty() {
                evaluator.prefetch(&ahead);
            }
            self.propose_time += guessing.elapsed();
            let width = evaluator.parallelism().max(1);
            let mut pending = fresh.chunks(width);
            let mut ready = VecDeque::new();
            // Set when a batch came back after the deadline or a cancel: its
            // failures may be the stop's own doing (killed compiles and jobs).
            let mut late = false;

            // Record in proposal order, as if evaluated one by one.
            let mut grew = false;
            for mut proposal in proposals {
                // Outcomes already back are recorded (a verified one is kept even past the deadline).
                if ready.is_empty()
                    && let Some(reason) = self.out_of_budget()
                {
                    return reason;
                }
                if self.tree[node].exhausted || self.tree[node].closed {
                    tracing::debug!(
                        recipe = %proposal.recipe,
                        parent = node.0,
                        "not recorded: an earlier candidate of the batch closed its parent"
                    );
                    break; // pruned by an earlier proposal of this batch
                }
                self.memory.notes.extend(proposal.note.take());
                if self.repeated(node, &proposal) {
                    let closed = self.tree.record_attempt(node, None, self.config);
                    self.emit_closed(closed);
                    continue;
                }
                if self.config.once_per_form.contains(&proposal.recipe) {
                    self.once_done.insert((self.form_of(node), proposal.recipe.clone()));
                }
                if ready.is_empty() {
                    let chunk: Vec<&str> =
                        pending.next().expect("a new source is in the batch").iter().map(String::as_str).collect();
                    ready.extend(self.evaluate_once(evaluator, &chunk));
                    late = self.past_deadline();
                }
                let outcome = ready.pop_front().expect("refilled above");
                if late && !outcome.is_ok() {
                    tracing::debug!(recipe = %proposal.recipe, "cut short by the stop: not recorded");
                    self.unfinished.push(proposal.recipe);
                    continue;
                }
                self.record(node, proposal, outcome);
                grew = true;
            }
            if !grew {
                // The proposer has nothing new here: stop expanding this node
                // (its subtree may still grow), and count the visit.
                self.tree.mark_exhausted(node);
                self.tree.backup(node, self.tree[node].reward);
            }
        }
    }

    /// Records `proposal`'s `outcome` as a child of `node`.
    fn record(&mut self, node: NodeId, proposal: Proposal, outcome: Outcome) {
        self.evaluations += 1;
        let speedup = outcome.time_s().map(|t| self.baseline_time_s / t);
        let reward = self.config.rewards.reward(&outcome, speedup);
        let kind = outcome.kind();
        let id = NodeId(self.tree.len());
        tracing::debug!(
            candidate = %crate::memory::candidate_id(&proposal.source),
            recipe = %proposal.recipe,
            node = id.0,
            parent = node.0,
            outcome = ?kind,
            speedup,
            why = outcome.failure().map(brief),
            "evaluated"
        );
        let point = proposal.tag.map(|t| t.point);
        self.memory
            .record(&proposal.source, id, &proposal.recipe, proposal.answers.as_deref(), &outcome, speedup)
            .point
            .clone_from(&point);
        let hash = source_hash(&proposal.source);
        // The form's other points become this node's children; a failed first point takes its form with it.
        if let Some(rest) = self.form_rest.remove(&hash) {
            if outcome.is_ok() {
                self.points.insert(id, rest);
            } else {
                tracing::debug!(recipe = %proposal.recipe, points = rest.len(), "the form's first point failed: its others dropped");
            }
        }
        let recipe = proposal.recipe.clone();
        let evaluated = Evaluated {
            source: proposal.source,
            recipe: proposal.recipe,
            answers: proposal.answers,
            point,
            alternative: self.alternatives.contains(&hash),
            outcome,
            speedup,
            reward,
        };
        self.tree.add(Some(node), evaluated);
        if speedup.is_some() {
            self.best = pick_best(&self.tree);
        }
        self.emit(Event::Evaluated { node: id, parent: node, recipe, outcome: kind, speedup });
        let closed = self.tree.record_attempt(node, Some(id), self.config);
        self.emit_closed(closed);
    }

    /// Takes the candidates whose slow compile is still running
    /// ([`Evaluator::defer`]) out of the node's first `wanted` new ones (the
    /// next ones move up), to be evaluated once compiled, so that the GPU times
    /// the others meanwhile; never when no other new one is left.
    fn defer_slow(
        &mut self,
        evaluator: &mut dyn Evaluator,
        node: NodeId,
        proposals: &mut Vec<Proposal>,
        wanted: usize,
    ) {
        let mut slow = Vec::new();
        let mut others = 0;
        let mut seen = HashSet::new();
        for (i, p) in proposals.iter().enumerate() {
            if others >= wanted {
                break;
            }
            if self.memory.lookup(&p.source).is_some() || !seen.insert(source_hash(&p.source)) {
                continue;
            }
            if evaluator.defer(&p.source) {
                slow.push(i);
            } else {
                others += 1;
            }
        }
        if slow.is_empty() || others == 0 {
            return;
        }
        for i in slow.into_iter().rev() {
            let p = proposals.remove(i);
            tracing::debug!(
                candidate = %crate::memory::candidate_id(&p.source),
                recipe = %p.recipe,
                parent = node.0,
                "a slow compile still running: the others first"
            );
            self.deferred.push((node, p));
        }
    }

    /// Evaluates the deferred candidates whose compile is done (all of them,
    /// waiting for their compiles, with `wait`), each recorded under its parent
    /// unless that was closed meanwhile or the same text was evaluated since.
    fn run_deferred(&mut self, evaluator: &mut dyn Evaluator, wait: bool) -> Option<StopReason> {
        let mut i = 0;
        while i < self.deferred.len() {
            if !wait && evaluator.defer(&self.deferred[i].1.source) {
                i += 1;
                continue;
            }
            if let Some(reason) = self.out_of_budget() {
                return Some(reason);
            }
            let (parent, mut proposal) = self.deferred.remove(i);
            if self.memory.lookup(&proposal.source).is_some() || self.tree[parent].closed {
                tracing::debug!(recipe = %proposal.recipe, parent = parent.0, "a deferred candidate not needed any more");
                continue;
            }
            self.memory.notes.extend(proposal.note.take());
            let outcome = {
                let _span = tracing::debug_span!("search.deferred", parent = parent.0).entered();
                self.evaluate_once(evaluator, &[proposal.source.as_str()]).pop().expect("one outcome")
            };
            let late = self.past_deadline();
            if late && !outcome.is_ok() {
                tracing::debug!(recipe = %proposal.recipe, "cut short by the stop: not recorded");
                self.unfinished.push(proposal.recipe);
                continue;
            }
            self.record(parent, proposal, outcome);
        }
        None
    }

    /// A node's form: the recipes on its path that are not once-per-form ones
    /// (`GridStrideMap/LoopInterchange`; empty for the original and its micro rewrites);
    /// another point of its parent's form is in its parent's form.
    fn form_of(&self, node: NodeId) -> String {
        let mut form = Vec::new();
        for id in self.tree.path(node).into_iter().skip(1) {
            let recipe = &self.tree[id].recipe;
            if !self.config.once_per_form.contains(recipe) && !self.tree[id].alternative {
                form.push(recipe.as_str());
            }
        }
        form.join("/")
    }

    /// The fastest verified node of `form` (the oldest of equals).
    fn best_of_form(&self, form: &str) -> Option<NodeId> {
        self.tree
            .nodes()
            .iter()
            .filter(|n| n.speedup.is_some() && self.form_of(n.id) == form)
            .fold(None, |best: Option<&crate::tree::Node>, n| match best {
                Some(b) if b.speedup >= n.speedup => Some(b),
                _ => Some(n),
            })
            .map(|n| n.id)
    }

    /// The best verified time so far, the original's included.
    fn best_time_s(&self) -> f64 {
        self.baseline_time_s / self.fastest_speedup()
    }

    /// Puts a node's proposals of parameter points in the tree's shape:
    /// points whose roofline lower bound cannot beat the best verified time
    /// are dropped; of each form (recipe and [`Tag::form`]) only the point with
    /// the lowest bound stays, where the form's first point was, and the
    /// others wait for the node it becomes ([`Run::record`]); and the other
    /// points of `node`'s own form that are left come first, by their bound,
    /// each followed by one of the proposer's.
    fn arrange_points(&mut self, node: NodeId, proposals: &mut Vec<Proposal>) {
        let best = self.best_time_s();
        let hopeless = |run: &mut Self, parent: NodeId, p: &Proposal| {
            let Some(tag) = p.tag.as_ref().filter(|t| run.config.prior_pruning && t.hopeless(best)) else {
                return false;
            };
            run.pruned_by_prior += 1;
            tracing::debug!(recipe = %p.recipe, point = %tag.point, lower_bound_s = tag.lower_bound_s, best_s = best, "pruned by its prior");
            run.emit(Event::Pruned {
                parent,
                recipe: p.recipe.clone(),
                point: tag.point.clone(),
                lower_bound_s: tag.lower_bound_s.unwrap_or(f64::INFINITY),
            });
            true
        };
        let mut heads: Vec<Proposal> = Vec::new();
        let mut groups: HashMap<(String, String), Vec<Proposal>> = HashMap::new();
        for p in std::mem::take(proposals) {
            if hopeless(self, node, &p) {
                continue;
            }
            let Some(tag) = &p.tag else {
                heads.push(p);
                continue;
            };
            let key = (p.recipe.clone(), tag.form.clone());
            if !groups.contains_key(&key) {
                // Its place among the proposals; the group's best point takes it below.
                heads.push(Proposal::new(String::new(), p.recipe.clone()).with_tag(tag.clone()));
            }
            groups.entry(key).or_default().push(p);
        }
        for slot in &mut heads {
            let Some(tag) = slot.tag.as_ref().filter(|_| slot.source.is_empty()) else { continue };
            let mut group = groups.remove(&(slot.recipe.clone(), tag.form.clone())).expect("grouped above");
            crate::point::by_prior(&mut group, |p| p.tag.as_ref());
            let rest = group.split_off(1);
            *slot = group.pop().expect("a group has a point");
            if !rest.is_empty() {
                self.form_rest.insert(source_hash(&slot.source), rest);
            }
        }
        let mut alternatives: Vec<Proposal> = self.points.get(&node).cloned().unwrap_or_default();
        alternatives.retain(|p| self.memory.lookup(&p.source).is_none());
        alternatives.retain(|p| !hopeless(self, node, p));
        crate::point::by_prior(&mut alternatives, |p| p.tag.as_ref());
        if let Some(store) = self.points.get_mut(&node) {
            // What is left to offer later: the hopeless ones never are.
            store.retain(|p| alternatives.iter().any(|a| a.source == p.source));
        }
        self.alternatives.extend(alternatives.iter().map(|p| source_hash(&p.source)));
        let mut heads = heads.into_iter();
        let mut out = Vec::new();
        for a in alternatives {
            out.push(a);
            out.extend(heads.next());
        }
        out.extend(heads);
        *proposals = out;
    }

    /// Proposals the search has evaluated already take no place in the batch: a
    /// form's remaining points go to the node they repeat (where a repeat in the
    /// batch sends them), and the node's next new proposals are evaluated in their
    /// stead. Before, repeats (a form's best point, re-proposed at each visit) took
    /// the batch's places, and a node whose first proposals were all repeats was
    /// marked exhausted with new ones behind them: on the H100 the 40_LayerNorm
    /// search ended "no rewrite left to try" after 11 of its 30 evaluations and
    /// 24 of its 60 s, never evaluating ClusterUnits, the root's third form.
    fn set_aside_repeats(&mut self, node: NodeId, proposals: &mut Vec<crate::proposer::Proposal>) {
        proposals.retain(|p| !self.repeated(node, p));
    }

    /// Whether `p` repeats a source already evaluated; if so it is counted and traced as a
    /// duplicate, and the rest of its form goes to the node it repeats (unless that failed).
    fn repeated(&mut self, node: NodeId, p: &crate::proposer::Proposal) -> bool {
        let Some(seen) = self.memory.lookup(&p.source) else { return false };
        let of = seen.node;
        self.duplicates += 1;
        if let Some(rest) = self.form_rest.remove(&source_hash(&p.source))
            && !self.tree[of].failed()
        {
            self.points.entry(of).or_insert(rest);
        }
        tracing::debug!(recipe = %p.recipe, of = of.0, "a duplicate: not evaluated again");
        self.emit(Event::Duplicate { parent: node, recipe: p.recipe.clone(), of });
        true
    }

    /// Drops proposals of once-per-form recipes unless `node` is its form's best
    /// point and the recipe was not tried in that form yet.
    fn keep_once_per_form(&mut self, node: NodeId, proposals: &mut Vec<crate::proposer::Proposal>) {
        if self.config.once_per_form.is_empty()
            || !proposals.iter().any(|p| self.config.once_per_form.contains(&p.recipe))
        {
            return;
        }
        let form = self.form_of(node);
        let at_best = self.best_of_form(&form) == Some(node);
        let before = proposals.len();
        proposals.retain(|p| {
            !self.config.once_per_form.contains(&p.recipe)
                || (at_best && !self.once_done.contains(&(form.clone(), p.recipe.clone())))
        });
        self.once_per_form_skipped += before - proposals.len();
    }

    /// The outcomes of `sources` (distinct after normalization), calling the
    /// evaluator only for those it has never seen.
    fn evaluate_once(&mut self, evaluator: &mut dyn Evaluator, sources: &[&str]) -> Vec<Outcome> {
        let keys: Vec<String> = sources.iter().map(|s| normalize(s)).collect();
        let new: Vec<usize> = (0..sources.len()).filter(|&i| !self.outcomes.contains_key(&keys[i])).collect();
        if !new.is_empty() {
            let batch: Vec<&str> = new.iter().map(|&i| sources[i]).collect();
            let _span = tracing::debug_span!("search.evaluate", candidates = batch.len()).entered();
            let outcomes = evaluator.evaluate_batch(&batch);
            assert_eq!(outcomes.len(), batch.len(), "evaluate_batch returns one outcome per source");
            for (i, outcome) in new.into_iter().zip(outcomes) {
                self.outcomes.insert(keys[i].clone(), outcome);
            }
        }
        keys.iter().map(|k| self.outcomes[k].clone()).collect()
    }

    /// Whether the wall-time limit or the deadline has passed (or the search was cancelled).
    fn past_deadline(&self) -> bool {
        self.out_of_budget().is_some_and(|r| matches!(r, StopReason::WallTime | StopReason::Cancelled))
    }

    fn out_of_budget(&self) -> Option<StopReason> {
        let budget = &self.config.budget;
        if self.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            Some(StopReason::Cancelled)
        } else if self.evaluations >= budget.max_evaluations {
            Some(StopReason::Evaluations)
        } else if budget.wall_time.is_some_and(|limit| self.started.elapsed() >= limit)
            || self.deadline.is_some_and(|d| Instant::now() >= d)
        {
            Some(StopReason::WallTime)
        } else {
            None
        }
    }

    /// What a proposer is told about `node` when asked for `wanted` proposals.
    fn propose_context(&self, node: NodeId, wanted: usize) -> ProposeContext<'_> {
        let parent = &self.tree[node];
        ProposeContext {
            parent: node,
            source: &parent.source,
            depth: parent.depth,
            speedup: parent.speedup,
            best_speedup: self.best_speedup(),
            findings: parent.outcome.findings(),
            failure: parent.outcome.failure(),
            memory: &self.memory,
            wanted,
        }
    }

    fn best_speedup(&self) -> f64 {
        self.best.and_then(|b| self.tree[b].speedup).unwrap_or(1.0)
    }

    /// The fastest verified speedup, the original included: what "best so far" means for widening.
    fn fastest_speedup(&self) -> f64 {
        self.tree.nodes().iter().filter_map(|n| n.speedup).fold(1.0, f64::max)
    }

    fn emit_closed(&mut self, closed: Vec<NodeId>) {
        for node in closed {
            self.emit(Event::Closed { node });
        }
    }

    fn emit(&mut self, event: Event) {
        if let Some(callback) = self.on_progress.as_mut() {
            callback(&Progress {
                evaluations: self.evaluations,
                max_evaluations: self.config.budget.max_evaluations,
                best_speedup: self.best.and_then(|b| self.tree[b].speedup).unwrap_or(1.0),
                event: &event,
            });
        }
        self.trace.push(event);
    }
}
