//! Parameter points in the tree: a rewrite's variants are one form whose most
//! promising point is a child of the node and whose other points are that
//! child's children, ordered by their roofline prior; hopeless points are never
//! evaluated.

use expect_test::{Expect, expect};
use kernelpro_search::{
    Budget, Evaluator, Event, NodeId, Outcome, Point, Proposal, ProposeContext, Proposer, Search, SearchConfig,
    SearchResult, Strategy, Tag, Tree,
};

fn ok(time_s: f64) -> Outcome {
    Outcome::Ok { time_s, energy_j: None, noise: 0.0, findings: Vec::new() }
}

/// Times each source by the table, in the order asked.
struct Table {
    times: Vec<(&'static str, f64)>,
    calls: Vec<String>,
}

impl Evaluator for Table {
    fn evaluate(&mut self, source: &str) -> Outcome {
        self.calls.push(source.to_owned());
        let leaf = source.rsplit('/').next().unwrap_or(source);
        ok(self.times.iter().find(|(s, _)| *s == leaf).map_or(1.0, |(_, t)| *t))
    }
}

/// At the original (`r`): the points `(name, lower bound)` of form `Tile` and an untagged rewrite `u`;
/// below that, one untagged rewrite `PARENT/z` per node (1 s).
struct Points(Vec<(&'static str, Option<f64>)>);

impl Proposer for Points {
    fn name(&self) -> &str {
        "points"
    }
    fn propose(&mut self, ctx: &ProposeContext) -> Vec<Proposal> {
        if ctx.source != "r" {
            return vec![Proposal::new(format!("{}/z", ctx.source), "Deeper")];
        }
        let tile = self.0.iter().enumerate().map(|(i, (name, lb))| {
            Proposal::new(format!("r/{name}"), "Tile").with_tag(Tag {
                form: "tile".into(),
                point: Point::new([("block", 64 << i)]),
                lower_bound_s: *lb,
            })
        });
        tile.chain([Proposal::new("r/u", "Untagged")]).collect()
    }
}

fn run(
    strategy: Strategy,
    points: &[(&'static str, Option<f64>)],
    times: &[(&'static str, f64)],
) -> (SearchResult, Vec<String>) {
    let config = SearchConfig {
        strategy,
        budget: Budget { max_evaluations: 8, ..Budget::default() },
        ..SearchConfig::default()
    };
    let mut ev = Table { times: times.to_vec(), calls: Vec::new() };
    let result = Search::new(config).run("r", &mut Points(points.to_vec()), &mut ev).unwrap();
    (result, ev.calls)
}

/// One line per node, indented by depth: source, point, speedup; then what was evaluated and pruned.
fn render(tree: &Tree, calls: &[String], result: &SearchResult) -> String {
    let mut out = String::new();
    let mut stack = vec![NodeId::ROOT];
    while let Some(id) = stack.pop() {
        let n = &tree[id];
        let point = n.point.as_ref().map(|p| format!(" [{p}]")).unwrap_or_default();
        let alt = if n.alternative { " alternative" } else { "" };
        out += &format!("{}{}{point}{alt} {:.2}x\n", "  ".repeat(n.depth), n.source, n.speedup.unwrap_or(0.0));
        stack.extend(n.children.iter().rev());
    }
    out += &format!("evaluated: {}\n", calls[1..].join(" "));
    let pruned: Vec<String> = result
        .trace
        .iter()
        .filter_map(|e| match e {
            Event::Pruned { point, lower_bound_s, .. } => Some(format!("[{point}] >= {lower_bound_s}")),
            _ => None,
        })
        .collect();
    out += &format!("pruned: {}\n", pruned.join(", "));
    let path: Vec<String> = result
        .best_path
        .iter()
        .map(|s| format!("{}{}", s.recipe, s.point.as_ref().map(|p| format!("[{p}]")).unwrap_or_default()))
        .collect();
    out += &format!("best: {}\n", path.join(" -> "));
    out
}

fn check(strategy: Strategy, points: &[(&'static str, Option<f64>)], times: &[(&'static str, f64)], expected: Expect) {
    let (result, calls) = run(strategy, points, times);
    expected.assert_eq(&render(&result.tree, &calls, &result));
}

/// The original takes 1 s. Point `c` has the lowest bound: it is the form's child of the
/// original, the other points its children by bound; `e` (bound 2 s) cannot beat the original
/// and is never evaluated; `d` (bound 0.6 s) is dropped once `b` verified at 0.5 s.
#[test]
fn points_are_a_forms_children_ordered_and_pruned_by_their_prior() {
    let points = [("a", Some(0.3)), ("b", Some(0.2)), ("c", Some(0.1)), ("d", Some(0.6)), ("e", Some(2.0))];
    let times = [("a", 0.8), ("b", 0.5), ("c", 0.7), ("d", 0.55), ("u", 0.9), ("e", 0.05)];
    check(
        Strategy::Greedy,
        &points,
        &times,
        expect![[r#"
            r 1.00x
              r/c [block=256] 1.43x
                r/b [block=128] alternative 2.00x
                  r/b/z 1.00x
                r/c/z 1.00x
                r/a [block=64] alternative 1.25x
                  r/a/z 1.00x
              r/u 1.11x
                r/u/z 1.00x
            evaluated: r/c r/u r/b r/c/z r/b/z r/a r/a/z r/u/z
            pruned: [block=1024] >= 2, [block=512] >= 0.6
            best: Tile[block=128]
        "#]],
    );
}

/// Without bounds the points keep the proposer's order, and the MCTS tree has the same shape.
#[test]
fn without_priors_points_keep_their_order() {
    let points = [("a", None), ("b", None), ("c", None)];
    let times = [("a", 0.8), ("b", 0.5), ("c", 0.7), ("u", 0.9)];
    check(
        Strategy::Mcts,
        &points,
        &times,
        expect![[r#"
            r 1.00x
              r/a [block=64] 1.25x
                r/b [block=128] alternative 2.00x
                  r/b/z 1.00x
                r/a/z 1.00x
                r/c [block=256] alternative 1.43x
              r/u 1.11x
                r/u/z 1.00x
                  r/u/z/z 1.00x
            evaluated: r/a r/u r/b r/a/z r/u/z r/c r/u/z/z r/b/z
            pruned: 
            best: Tile[block=128]
        "#]],
    );
}

/// With pruning off (a stub evaluator's invented times), the bounds only order the points.
#[test]
fn without_pruning_no_point_is_dropped() {
    let config = SearchConfig {
        strategy: Strategy::Greedy,
        prior_pruning: false,
        budget: Budget { max_evaluations: 8, ..Budget::default() },
        ..SearchConfig::default()
    };
    let mut ev = Table { times: vec![("x", 0.9), ("a", 0.5)], calls: Vec::new() };
    let points = vec![("a", Some(0.1)), ("x", Some(f64::INFINITY))];
    let result = Search::new(config).run("r", &mut Points(points), &mut ev).unwrap();
    assert_eq!(result.stats.pruned_by_prior, 0);
    assert!(ev.calls.iter().any(|c| c.ends_with("/x")), "{:?}", ev.calls);
}

/// A point that cannot run at all (an infinite bound: a tile over the registers or shared memory)
/// is never compiled, whatever the strategy.
#[test]
fn an_infeasible_point_is_never_evaluated() {
    for strategy in [Strategy::Mcts, Strategy::Greedy, Strategy::Random] {
        let (result, calls) =
            run(strategy, &[("a", Some(0.1)), ("x", Some(f64::INFINITY)), ("b", Some(0.2))], &[("x", 0.01)]);
        assert!(!calls.iter().any(|c| c.ends_with("/x")), "{strategy:?}: {calls:?}");
        assert!(result.stats.pruned_by_prior > 0, "{strategy:?}");
        let tried: Vec<String> =
            result.memory.entries().iter().filter_map(|e| e.point.as_ref().map(|p| p.to_string())).collect();
        assert!(tried.contains(&"block=64".to_string()), "{strategy:?}: the tried list names the point: {tried:?}");
    }
}
