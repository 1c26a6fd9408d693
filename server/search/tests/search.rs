//! Behaviour of the search core on synthetic landscapes: no GPU, no timing.

use expect_test::{Expect, expect};
use kernelpro_search::synthetic::{LandscapeEvaluator, MoveProposer, source};
use kernelpro_search::{
    Budget, ByFindings, Event, Evaluator, FindingNote, NodeId, Outcome, ProposeContext, Proposal, Proposer,
    RoundRobin, Search, SearchConfig, SearchError, SearchResult, StopReason, Strategy, Tree, Widening, normalize,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

// ---- helpers -------------------------------------------------------------

/// An evaluator given by a function of the source; records every call.
struct Scripted<F: Fn(&str) -> Outcome> {
    outcome: F,
    calls: Vec<String>,
}

impl<F: Fn(&str) -> Outcome> Scripted<F> {
    fn new(outcome: F) -> Self {
        Scripted { outcome, calls: Vec::new() }
    }
}

impl<F: Fn(&str) -> Outcome> Evaluator for Scripted<F> {
    fn evaluate(&mut self, source: &str) -> Outcome {
        self.calls.push(source.to_owned());
        (self.outcome)(source)
    }
}

fn ok(time_s: f64) -> Outcome {
    Outcome::Ok { time_s, energy_j: None, noise: 0.0, findings: Vec::new() }
}

/// Depth of a `r/1/4`-style source.
fn depth(source: &str) -> usize {
    source.matches('/').count()
}

/// Proposes fresh children `PARENT/N`, N counting up across the search.
struct Counter {
    next: usize,
}

impl Proposer for Counter {
    fn name(&self) -> &str {
        "counter"
    }
    fn propose(&mut self, ctx: &ProposeContext) -> Vec<Proposal> {
        (0..ctx.wanted)
            .map(|_| {
                self.next += 1;
                Proposal::new(format!("{}/{}", ctx.source, self.next), format!("step-{}", self.next))
            })
            .collect()
    }
}

/// Proposes the given sources, always the same, whatever the parent.
struct Fixed(Vec<&'static str>);

impl Proposer for Fixed {
    fn name(&self) -> &str {
        "fixed"
    }
    fn propose(&mut self, _: &ProposeContext) -> Vec<Proposal> {
        self.0.iter().map(|s| Proposal::new(*s, *s)).collect()
    }
}

fn landscape(strategy: Strategy, seed: u64) -> SearchResult {
    let config = SearchConfig { strategy, seed, ..SearchConfig::default() };
    Search::new(config).run(&source(&[]), &mut MoveProposer::new(seed), &mut LandscapeEvaluator::default()).unwrap()
}

fn scripted(config: SearchConfig, outcome: impl Fn(&str) -> Outcome) -> SearchResult {
    Search::new(config).run("r", &mut Counter { next: 0 }, &mut Scripted::new(outcome)).unwrap()
}

/// One line per node, indented by depth: source, speedup or failure, flags.
fn render(tree: &Tree) -> String {
    let mut out = String::new();
    let mut stack = vec![NodeId::ROOT];
    while let Some(id) = stack.pop() {
        let n = &tree[id];
        let result = n.speedup.map_or(format!("{:?}", n.outcome.kind()), |s| format!("{s:.2}x"));
        let flags = [(n.exhausted, " exhausted"), (n.closed, " closed")];
        let flags: String = flags.iter().filter(|f| f.0).map(|f| f.1).collect();
        out += &format!("{}{} {result} visits={}{flags}\n", "  ".repeat(n.depth), n.source, n.visits);
        stack.extend(n.children.iter().rev());
    }
    out
}

// ---- search quality ------------------------------------------------------

/// Mean ln(best speedup) per strategy over many seeds of the deceptive landscape.
fn check_strategies(seeds: u64, expected: Expect) {
    let mut table = String::new();
    let mut means = Vec::new();
    for strategy in [Strategy::Mcts, Strategy::Greedy, Strategy::Random] {
        let runs: Vec<SearchResult> = (0..seeds).map(|seed| landscape(strategy, seed)).collect();
        assert!(runs.iter().all(|r| r.evaluations == 60), "{strategy:?} used the whole budget");
        let mean = runs.iter().map(|r| r.best_speedup.ln()).sum::<f64>() / seeds as f64;
        table += &format!("{strategy:?}: mean ln {mean:.3} = geomean {:.2}x\n", mean.exp());
        means.push(mean);
    }
    expected.assert_eq(&table);
    let [mcts, greedy, random] = means[..] else { unreachable!() };
    assert!(mcts > greedy && mcts > random, "{table}");
    assert!(greedy < 1.35f64.ln(), "greedy stays on the 1.3x plateau: {table}");
}

#[test]
fn mcts_beats_greedy_and_random_on_the_deceptive_landscape() {
    check_strategies(
        100,
        expect![[r#"
            Mcts: mean ln 1.041 = geomean 2.83x
            Greedy: mean ln 0.290 = geomean 1.34x
            Random: mean ln 0.661 = geomean 1.94x
        "#]],
    );
}

#[test]
fn a_search_is_deterministic_for_a_seed() {
    let a = landscape(Strategy::Mcts, 7);
    let b = landscape(Strategy::Mcts, 7);
    let c = landscape(Strategy::Mcts, 8);
    assert_eq!(a.trace, b.trace);
    assert_eq!(a.best, b.best);
    assert_ne!(a.trace, c.trace);
}

#[test]
fn best_path_lists_each_rewrite_from_the_original() {
    let result = landscape(Strategy::Mcts, 3);
    let path: Vec<String> = result
        .best_path
        .iter()
        .map(|s| format!("{} {:?} {:.2}", s.recipe, s.outcome, s.speedup.unwrap_or(0.0)))
        .collect();
    expect![[r#"
        [
            "move-0 Ok 0.90",
            "move-4 Ok 1.60",
            "move-5 Ok 2.80",
            "move-4 Ok 5.00",
        ]
    "#]]
    .assert_debug_eq(&path);
    assert_eq!(result.best_path.last().unwrap().node, result.best.unwrap());
}

// ---- widening and pruning ------------------------------------------------

#[test]
fn progressive_widening_bounds_children_by_visits() {
    // Without the asymmetric factor every node obeys ceil(k * visits^alpha).
    let widening = Widening { wide_factor: 1.0, ..Widening::default() };
    for seed in 0..20 {
        let config = SearchConfig { seed, widening: widening.clone(), ..SearchConfig::default() };
        let result = Search::new(config)
            .run(&source(&[]), &mut MoveProposer::new(seed), &mut LandscapeEvaluator::default())
            .unwrap();
        for n in result.tree.nodes() {
            let bound = if n.failed() { 1 } else { (n.visits as f64).sqrt().ceil() as usize };
            assert!(n.children.len() <= bound, "seed {seed}: {} has {} children, {} visits", n.source, n.children.len(), n.visits);
        }
    }
}

#[test]
fn root_and_improving_nodes_branch_wider() {
    // Depth 1 is faster than the root, depth 2 is not faster than depth 1.
    let config = SearchConfig { budget: Budget { max_evaluations: 8, ..Budget::default() }, ..SearchConfig::default() };
    let result = scripted(config, |s| ok(if depth(s) == 0 { 1.0 } else { 0.5 }));
    expect![[r#"
        r 1.00x visits=9
          r/1 2.00x visits=4
            r/3 2.00x visits=1
            r/4 2.00x visits=1
            r/1/7 2.00x visits=1
          r/2 2.00x visits=1
          r/5 2.00x visits=1
          r/6 2.00x visits=1
          r/8 2.00x visits=1
    "#]]
    .assert_eq(&render(&result.tree));
}
