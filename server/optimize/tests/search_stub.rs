//! The search over the built-in recipes with the stub evaluator (real nvcc,
//! invented timing): structural candidates are evaluated first, and a
//! candidate whose normalized source was evaluated before costs nothing.

use kernelpro_config::settings::Settings;
use kernelpro_core::analysis::Analyzer;
use kernelpro_optimize::{Context, StubEvaluator};
use kernelpro_recipes::{RecipeProposer, Tier};
use kernelpro_search::{
    Budget, Evaluator, Outcome, Proposal, ProposeContext, Proposer, Search, SearchConfig, normalize,
};
use std::collections::HashSet;
use std::path::PathBuf;

/// Forwards to the stub and records every source it is asked to evaluate.
struct Counting {
    inner: StubEvaluator,
    calls: Vec<String>,
}

impl Evaluator for Counting {
    fn evaluate(&mut self, source: &str) -> Outcome {
        self.calls.push(source.to_string());
        self.inner.evaluate(source)
    }
    fn evaluate_batch(&mut self, sources: &[&str]) -> Vec<Outcome> {
        self.calls.extend(sources.iter().map(|s| s.to_string()));
        self.inner.evaluate_batch(sources)
    }
    fn parallelism(&self) -> usize {
        self.inner.parallelism()
    }
}

/// The recipes, each proposal followed by a copy that differs only in layout
/// and a comment (as an LLM's or a second recipe's identical rewrite would).
struct Echo(RecipeProposer);

impl Proposer for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn propose(&mut self, ctx: &ProposeContext) -> Vec<Proposal> {
        let wanted = ProposeContext { wanted: ctx.wanted.div_ceil(2), ..*ctx };
        self.0
            .propose(&wanted)
            .into_iter()
            .flat_map(|p| {
                let copy = Proposal::new(p.source.replace("{\n", "{  // same\n\n"), format!("{} (copy)", p.recipe));
                [p, copy]
            })
            .collect()
    }
}

#[test]
fn structural_first_and_no_normalized_source_evaluated_twice() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/launch_site/rmsnorm.cu");
    let text = std::fs::read_to_string(&path).unwrap();
    let kernel = "rmsnorm_fwd";
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ctx = Context {
        path: path.clone(),
        original: text.clone(),
        original_src: kernelpro_source::parse(&text),
        kernel: kernel.into(),
        settings: Settings { trusted: true, ..Default::default() },
        analyzer: Analyzer::default(),
        handle: rt.handle().clone(),
        cancel: Default::default(),
    };
    let mut ev = Counting { inner: StubEvaluator::new(ctx, 1.5), calls: Vec::new() };
    let config = SearchConfig { budget: Budget { max_evaluations: 8, ..Budget::default() }, ..SearchConfig::default() };
    let result = Search::new(config).run(&text, &mut Echo(RecipeProposer::new(kernel)), &mut ev).unwrap();

    let normalized: HashSet<String> = ev.calls.iter().map(|c| normalize(c)).collect();
    assert_eq!(normalized.len(), ev.calls.len(), "a normalized source was evaluated twice");
    assert!(result.stats.duplicates > 0, "the copies were proposed and skipped");
    assert!(result.tree.nodes().iter().all(|n| !n.recipe.ends_with("(copy)")), "no copy was evaluated");

    // The root's first expansion is structural: a warp per row (its launch variants are its children).
    let tier = |name: &str| kernelpro_recipes::all().into_iter().find(|r| r.name() == name).map(|r| r.tier());
    let root_children: Vec<&str> = result
        .tree
        .nodes()
        .iter()
        .filter(|n| n.parent == Some(kernelpro_search::NodeId::ROOT))
        .map(|n| n.recipe.as_str())
        .collect();
    assert_eq!(root_children.first(), Some(&"WarpUnits"), "{root_children:?}");
    let tiers: Vec<Option<Tier>> = root_children.iter().map(|r| tier(r)).collect();
    assert!(tiers.windows(2).all(|w| w[0] <= w[1]), "the root's children in tier order: {root_children:?}");
}

/// The budget never goes to repeats: no text is evaluated twice, and each
/// micro rewrite (the micro tier, float literals, the L2 prefetch hint) is
/// tried at most once per form (the parameter points of one structural
/// rewrite share a form), only at that form's best point.
#[test]
fn micro_rewrites_are_tried_once_per_form() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/launch_site/rmsnorm.cu");
    let text = std::fs::read_to_string(&path).unwrap();
    let kernel = "rmsnorm_fwd";
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ctx = Context {
        path: path.clone(),
        original: text.clone(),
        original_src: kernelpro_source::parse(&text),
        kernel: kernel.into(),
        settings: Settings { trusted: true, ..Default::default() },
        analyzer: Analyzer::default(),
        handle: rt.handle().clone(),
        cancel: Default::default(),
    };
    let mut ev = Counting { inner: StubEvaluator::new(ctx, 1.5), calls: Vec::new() };
    let micro = kernelpro_optimize::micro_recipes();
    for name in ["RestrictConst", "Ldg", "PragmaUnroll", "LaunchBounds", "PrefetchL2", "FloatLiterals"] {
        assert!(micro.contains(&name.to_string()), "{name}: {micro:?}");
    }
    let config = SearchConfig {
        budget: Budget { max_evaluations: 24, ..Budget::default() },
        once_per_form: micro.clone(),
        ..SearchConfig::default()
    };
    let result = Search::new(config).run(&text, &mut RecipeProposer::new(kernel), &mut ev).unwrap();

    let normalized: HashSet<String> = ev.calls.iter().map(|c| normalize(c)).collect();
    assert_eq!(normalized.len(), ev.calls.len(), "a text was evaluated twice");
    let tree = &result.tree;
    let form = |id: kernelpro_search::NodeId| {
        tree.path(id)
            .into_iter()
            .skip(1)
            .filter(|&i| !tree[i].alternative)
            .map(|i| tree[i].recipe.clone())
            .filter(|r| !micro.contains(r))
            .collect::<Vec<_>>()
            .join("/")
    };
    assert!(tree.nodes().iter().any(|n| n.point.is_some()), "the structural rewrites are points of their forms");
    let mut seen = HashSet::new();
    let mut restrict = 0;
    for n in tree.nodes().iter().filter(|n| micro.contains(&n.recipe)) {
        let key = (form(n.parent.unwrap()), n.recipe.clone());
        assert!(seen.insert(key.clone()), "{key:?} twice");
        restrict += (n.recipe == "RestrictConst") as usize;
    }
    let recipes: Vec<&str> = tree.nodes().iter().map(|n| n.recipe.as_str()).collect();
    eprintln!("{} evaluations, {restrict} RestrictConst; {recipes:?}", result.evaluations);
    assert!(restrict >= 1, "{recipes:?}");
}
