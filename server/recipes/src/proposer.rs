//! The recipes behind the search's `Proposer` trait.

use crate::{Recipe, Rewrite, Tier, all};
use kernelpro_search::{Proposal, ProposeContext, Proposer, Tag};
use kernelpro_source::kernel_model::pattern::Pattern;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The most node texts whose rewrites are kept (a search expands a few hundred nodes at most; each
/// entry holds every recipe's rewrites of one text, whole files).
const CACHED_TEXTS: usize = 256;

pub struct RecipeProposer {
    kernel: String,
    recipes: Vec<Box<dyn Recipe>>,
    /// Every recipe's rewrites of a text, by text: what a node offers depends only on its text
    /// (and this proposer's kernel and recipes), so the search's questions about the same text
    /// (the expansion, the compile-ahead guesses of it as a child and as the node again) run the
    /// recipes once. The context (findings, memory, how many are wanted) only orders and filters.
    cache: Mutex<ExpansionCache>,
    /// Recipe runs so far (one per recipe per text not found in the cache).
    recipe_runs: AtomicUsize,
}

/// What the recipes make of one text, before the context orders and filters it.
struct Expansion {
    /// The kernel model's parallel pattern of the kernel in this text.
    pattern: Option<Pattern>,
    /// By recipe index: the recipe's rewrites (fresh names, float math first for structural ones).
    rewrites: Vec<Vec<Rewrite>>,
    /// By recipe index, each rewrite's parameter point and prior (a structural recipe's rewrites
    /// are the points of one form; `None` for the other tiers).
    tags: Vec<Vec<Option<Tag>>>,
}

#[derive(Default)]
struct ExpansionCache {
    by_text: HashMap<String, Arc<Expansion>>,
    /// Insertion order, oldest first (the oldest goes when full).
    order: VecDeque<String>,
}

/// The SM version of an nvcc architecture name: `sm_90a` and `compute_90` are 90.
fn sm_version(arch: &str) -> Option<u32> {
    let digits: String = arch
        .trim_start_matches("sm_")
        .trim_start_matches("compute_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

impl RecipeProposer {
    pub fn new(kernel: &str) -> RecipeProposer {
        RecipeProposer {
            kernel: kernel.to_string(),
            recipes: all(),
            cache: Mutex::default(),
            recipe_runs: AtomicUsize::new(0),
        }
    }

    /// Adds a recipe that lives in another crate (the CuTe GEMM recipe).
    pub fn with(mut self, recipe: Box<dyn Recipe>) -> RecipeProposer {
        self.recipes.push(recipe);
        self.forget();
        self
    }

    /// Only the recipes named (a finding's promised rewrites, for its quick fix).
    pub fn only(mut self, names: &[String]) -> RecipeProposer {
        self.recipes.retain(|r| names.iter().any(|n| n == r.name()));
        self.forget();
        self
    }

    /// Only the recipes whose rewrites compile for `arch` (`sm_80`, `sm_90a`; an arch it cannot read
    /// keeps them all: nvcc will say what is wrong with it).
    pub fn for_arch(mut self, arch: &str) -> RecipeProposer {
        if let Some(sm) = sm_version(arch) {
            self.recipes.retain(|r| r.min_sm() <= sm);
            self.forget();
        }
        self
    }

    /// The recipes' names, in proposal order.
    pub fn names(&self) -> Vec<&'static str> {
        self.recipes.iter().map(|r| r.name()).collect()
    }

    /// How many times a recipe has rewritten a text so far (texts answered from the cache run none).
    pub fn recipe_runs(&self) -> usize {
        self.recipe_runs.load(Ordering::Relaxed)
    }

    fn forget(&mut self) {
        *self.cache.get_mut().unwrap_or_else(|e| e.into_inner()) = ExpansionCache::default();
    }

    /// Every recipe's rewrites of `text`, from the cache or made now (inside the caller's
    /// [`parse_once`](kernelpro_source::parsed::parse_once) scope).
    fn expansion(&self, text: &str) -> Arc<Expansion> {
        let lock = || self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = lock().by_text.get(text) {
            tracing::debug!(recipes = self.recipes.len(), "recipes.cached");
            return Arc::clone(e);
        }
        let started = Instant::now();
        let pattern = crate::kernel::Kernel::find(text, &self.kernel)
            .and_then(|k| k.model())
            .and_then(|m| m.pattern())
            .map(|r| r.pattern);
        tracing::debug!(ms = started.elapsed().as_secs_f64() * 1e3, "recipes.pattern");
        let (rewrites, tags) = self
            .recipes
            .iter()
            .map(|r| {
                let t = Instant::now();
                let out = rewrites_of(r.as_ref(), text, &self.kernel);
                self.recipe_runs.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    recipe = r.name(),
                    ms = t.elapsed().as_secs_f64() * 1e3,
                    rewrites = out.0.len(),
                    "recipes.recipe"
                );
                out
            })
            .unzip();
        tracing::debug!(ms = started.elapsed().as_secs_f64() * 1e3, "recipes.expansion");
        let expansion = Arc::new(Expansion { pattern, rewrites, tags });
        let mut cache = lock();
        if cache.by_text.len() >= CACHED_TEXTS
            && let Some(old) = cache.order.pop_front()
        {
            cache.by_text.remove(&old);
        }
        if cache.by_text.insert(text.to_owned(), Arc::clone(&expansion)).is_none() {
            cache.order.push_back(text.to_owned());
        }
        expansion
    }

    /// Recipe indices with the tool each answers, tier by tier (structural
    /// first, micro-optimizations last); within a tier, the expert forms of
    /// the kernel's parallel pattern (the kernel model's) first, then recipes
    /// answering the findings (in the findings' order), then the rest.
    fn order(&self, ctx: &ProposeContext, pattern: Option<Pattern>) -> Vec<(usize, Option<String>)> {
        let mut order: Vec<(usize, Option<String>)> = Vec::new();
        for f in ctx.findings {
            for (i, r) in self.recipes.iter().enumerate() {
                if r.answers().iter().any(|c| c.as_str() == f.tool) && !order.iter().any(|(j, _)| *j == i) {
                    order.push((i, Some(f.tool.clone())));
                }
            }
        }
        for i in 0..self.recipes.len() {
            if !order.iter().any(|(j, _)| *j == i) {
                order.push((i, None));
            }
        }
        // Stable: within each tier, the expert forms of the kernel's own pattern first, then the findings' order.
        order.sort_by_key(|(i, _)| {
            let r = &self.recipes[*i];
            (r.tier(), !pattern.is_some_and(|p| r.expert_for().contains(&p)))
        });
        order
    }
}

/// A recipe's rewrites of `text` (fresh names; a structural recipe's with float math first), each
/// tagged, for a structural recipe, as a parameter point of its form ([`points::tag`]).
fn rewrites_of(r: &dyn Recipe, text: &str, kernel: &str) -> (Vec<Rewrite>, Vec<Option<Tag>>) {
    let (out, float_math) =
        with_float_math_first(r.tier(), kernel, crate::fresh::with_fresh_names(text, kernel, |t| r.rewrite(t, kernel)));
    let tags = if r.tier() == Tier::Structural {
        crate::points::tag(text, kernel, r.name(), &out, float_math)
    } else {
        vec![None; out.len()]
    };
    (out, tags)
}

/// A structural rewrite of a float kernel that computes in FP64 only through double literals and
/// math calls (`0.5 * v`, `tanh(x)`) comes first with float math as well: the expert form of a
/// float kernel computes in float, and FP64 runs at a fraction of FP32's rate (a GELU map: 1.8x
/// on the H100). The plain rewrites follow, in case the float math misses the tolerance.
/// Also returns how many come first with float math.
fn with_float_math_first(tier: Tier, kernel: &str, rewrites: Vec<crate::Rewrite>) -> (Vec<crate::Rewrite>, usize) {
    if tier != Tier::Structural {
        return (rewrites, 0);
    }
    let float = crate::FloatLiterals;
    let composed: Vec<crate::Rewrite> = rewrites
        .iter()
        .filter_map(|rw| {
            let f = float.rewrite(&rw.source, kernel).into_iter().next()?;
            Some(crate::Rewrite { source: f.source, note: format!("{}; {}", rw.note, f.note) })
        })
        .collect();
    let n = composed.len();
    (composed.into_iter().chain(rewrites).collect(), n)
}

impl Proposer for RecipeProposer {
    fn name(&self) -> &str {
        "recipes"
    }

    /// Tier by tier, round-robin over the tier's ordered recipes (each one's
    /// first rewrite, then each one's second, ...), skipping sources already
    /// tried or proposed: every structural candidate (a structure, then its
    /// launch variants) comes before any micro-optimization.
    ///
    /// The whole expansion runs in one [`parse_once`](kernelpro_source::parsed::parse_once) scope:
    /// the node's file (and its canonical form) is parsed once and every recipe reads that parse.
    /// Each text's rewrites are kept: asked about the same text again (ahead, then expanded), the
    /// proposer only orders and filters them for the context.
    fn propose(&mut self, ctx: &ProposeContext) -> Vec<Proposal> {
        self.ahead(ctx)
    }

    /// The same proposals: rewrites of the text, nothing to remember (the search compiles them ahead).
    fn ahead(&self, ctx: &ProposeContext) -> Vec<Proposal> {
        kernelpro_source::parsed::parse_once(|| self.expand(ctx))
    }
}

impl RecipeProposer {
    fn expand(&self, ctx: &ProposeContext) -> Vec<Proposal> {
        let expansion = self.expansion(ctx.source);
        let per_recipe: Vec<_> = self
            .order(ctx, expansion.pattern)
            .into_iter()
            .map(|(i, answers)| {
                let r = &self.recipes[i];
                (r.tier(), r.name(), answers, expansion.rewrites[i].as_slice(), expansion.tags[i].as_slice())
            })
            .collect();
        interleave(ctx, &per_recipe)
    }
}

/// One recipe's share of an expansion: its tier, name, the finding it answers, its rewrites and
/// their parameter points.
type RecipeRewrites<'a> = (Tier, &'static str, Option<String>, &'a [crate::Rewrite], &'a [Option<Tag>]);

/// Tier by tier, round-robin over the tier's recipes (each one's first rewrite, then each one's
/// second, ...), skipping the node's own text, texts already in the memory and repeats, up to
/// `ctx.wanted` proposals; a recipe whose rewrites are the points of a form gives them all at
/// its first turn, and they count as one (the search makes them a node's children).
fn interleave(ctx: &ProposeContext, per_recipe: &[RecipeRewrites]) -> Vec<Proposal> {
    // Exact text, as well as the memory's normalized one (which keeps launch-spec comments).
    let mut seen: HashSet<&str> = HashSet::from([ctx.source]);
    let mut out = Vec::new();
    // Proposals counted against `ctx.wanted`: a form's points count once.
    let mut count = 0;
    let mut tiers: Vec<Tier> = per_recipe.iter().map(|r| r.0).collect();
    tiers.dedup();
    for tier in tiers {
        let in_tier: Vec<_> = per_recipe.iter().filter(|r| r.0 == tier).collect();
        let rounds = in_tier.iter().map(|r| r.3.len()).max().unwrap_or(0);
        for round in 0..rounds {
            for (_, name, answers, rewrites, tags) in &in_tier {
                let pointed = tags.iter().any(Option::is_some);
                let turn: &[crate::Rewrite] = match (pointed, round) {
                    (true, 0) => rewrites,
                    (true, _) => &[],
                    (false, _) => rewrites.get(round..=round).unwrap_or(&[]),
                };
                let mut counted = false;
                for (j, rw) in turn.iter().enumerate() {
                    if !counted && count == ctx.wanted {
                        return out;
                    }
                    if ctx.memory.lookup(&rw.source).is_some() || !seen.insert(&rw.source) {
                        continue;
                    }
                    let mut p = Proposal::new(rw.source.clone(), *name).with_note(rw.note.clone());
                    if let Some(tool) = answers {
                        p = p.answering(tool.clone());
                    }
                    let at = if pointed { j } else { round };
                    if let Some(tag) = tags.get(at).cloned().flatten() {
                        p = p.with_tag(tag);
                    }
                    out.push(p);
                    if !counted {
                        count += 1;
                        counted = true;
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelpro_search::{FindingNote, NodeId, SearchMemory};
    use kernelpro_source::parsed::count_parses;

    /// The question a search's root asks: `source` at depth 0, as fast as the original so far.
    fn root<'a>(
        source: &'a str,
        findings: &'a [FindingNote],
        memory: &'a SearchMemory,
        wanted: usize,
    ) -> ProposeContext<'a> {
        ProposeContext {
            parent: NodeId(0),
            source,
            depth: 0,
            speedup: Some(1.0),
            best_speedup: 1.0,
            findings,
            failure: None,
            memory,
            wanted,
        }
    }

    /// A search for an older GPU leaves out the recipes whose rewrites need a newer one.
    #[test]
    fn recipes_follow_the_target_architecture() {
        let has_cluster = |arch: &str| RecipeProposer::new("k").for_arch(arch).names().contains(&"ClusterUnits");
        for (arch, want) in [
            ("sm_90", true),
            ("sm_90a", true),
            ("sm_100", true),
            ("sm_80", false),
            ("compute_86", false),
            ("native", true),
        ] {
            assert_eq!(has_cluster(arch), want, "{arch}");
        }
        assert_eq!(sm_version("sm_90a"), Some(90));
        assert_eq!(
            RecipeProposer::new("k").for_arch("sm_80").names().len() + 1,
            RecipeProposer::new("k").names().len()
        );
    }

    /// A row walk with structural and micro rewrites: every recipe reads the node's file.
    const ROWS: &str = include_str!("../fixtures/rows_norm.cu");

    fn expand(source: &str) -> Vec<Proposal> {
        let findings = [FindingNote::new("RowWalk", "")];
        let memory = SearchMemory::default();
        let ctx = root(source, &findings, &memory, 64);
        RecipeProposer::new("l2_normalize").propose(&ctx)
    }

    /// The expansion as it was before the cache: every recipe run on the text at every request,
    /// outside any `parse_once` scope (nothing parsed or computed is shared between recipes).
    fn expand_uncached(p: &RecipeProposer, ctx: &ProposeContext) -> Vec<Proposal> {
        let pattern = crate::kernel::Kernel::find(ctx.source, &p.kernel)
            .and_then(|k| k.model())
            .and_then(|m| m.pattern())
            .map(|r| r.pattern);
        let per_recipe: Vec<_> = p
            .order(ctx, pattern)
            .into_iter()
            .map(|(i, answers)| {
                let r = &p.recipes[i];
                let (rw, tags) = rewrites_of(r.as_ref(), ctx.source, &p.kernel);
                (r.tier(), r.name(), answers, rw, tags)
            })
            .collect();
        let borrowed: Vec<RecipeRewrites> =
            per_recipe.iter().map(|(t, n, a, r, g)| (*t, *n, a.clone(), r.as_slice(), g.as_slice())).collect();
        interleave(ctx, &borrowed)
    }

    fn bench_kernel(file: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/kernels").join(file);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The questions one search iteration asks (the node expanded, then ahead: its first children
    /// and the node again with more wanted), then the next iteration's expansion of a child: the
    /// cached proposer answers each exactly as every recipe run afresh does, texts, recipes,
    /// notes and order.
    #[test]
    fn cached_proposals_equal_the_uncached_ones_on_the_bench_kernels() {
        let memory = SearchMemory::default();
        let findings = [FindingNote::new("Uncoalesced", ""), FindingNote::new("RowWalk", "")];
        let mut total = 0;
        for (file, kernel) in [
            ("softmax.cu", "softmax_rows"),
            ("matmul_naive.cu", "matmul_naive"),
            ("transpose.cu", "transpose"),
            ("reduction.cu", "reduce_sum"),
            ("histogram.cu", "histogram"),
            ("elementwise_fp64.cu", "elementwise"),
            ("stencil2d.cu", "stencil"),
            ("strided_copy.cu", "strided_copy"),
        ] {
            let source = bench_kernel(file);
            let mut cached = RecipeProposer::new(kernel);
            let reference = RecipeProposer::new(kernel);
            let ctx = |source, findings, wanted| root(source, findings, &memory, wanted);
            let root = ctx(&source, &findings[..], 4);
            let first = cached.propose(&root);
            assert_eq!(first, expand_uncached(&reference, &root), "{file}: the node's expansion");
            assert!(!first.is_empty(), "{file}: something is proposed");
            let mut asked = vec![root];
            for p in &first {
                asked.push(ctx(&p.source, &[], 4));
            }
            asked.push(ctx(&source, &findings[..], 40));
            asked.push(ctx(&source, &findings[1..], 2));
            asked.push(ctx(&source, &[], 64));
            asked.push(ctx(&first[0].source, &findings[..], 8));
            for c in &asked {
                let got = cached.ahead(c);
                assert_eq!(got, expand_uncached(&reference, c), "{file}: ahead, {} wanted", c.wanted);
                assert_eq!(cached.propose(c), got, "{file}: propose after ahead");
                total += got.len();
            }
        }
        eprintln!("{total} proposals compared");
    }

    /// A second identical request (and one that differs only in findings or how many are wanted)
    /// runs no recipe: the text's rewrites are remembered.
    #[test]
    fn a_repeated_request_runs_no_recipe() {
        let findings = [FindingNote::new("RowWalk", "")];
        let memory = SearchMemory::default();
        let ctx = root(ROWS, &findings, &memory, 8);
        let mut p = RecipeProposer::new("l2_normalize");
        assert_eq!(p.recipe_runs(), 0);
        let first = p.propose(&ctx);
        assert_eq!(p.recipe_runs(), p.recipes.len(), "one run per recipe for a new text");
        let (again, tally) = count_parses(|| p.ahead(&ctx));
        assert_eq!(again, first);
        assert_eq!(p.recipe_runs(), p.recipes.len(), "the same request again runs no recipe");
        assert_eq!(tally.total(), 0, "nor parses anything");
        p.propose(&ProposeContext { findings: &[], wanted: 64, ..ctx });
        assert_eq!(p.recipe_runs(), p.recipes.len(), "other findings, more wanted: no recipe either");
        // A child's text is new: its recipes run once, then never again.
        let child = ProposeContext { source: &first[0].source, findings: &[], ..ctx };
        p.ahead(&child);
        p.propose(&child);
        assert_eq!(p.recipe_runs(), 2 * p.recipes.len());
    }

    /// A structural recipe's rewrites come as the points of its form, all at once and counted as
    /// one proposal, each with its launch, vector width and a finite roofline bound; a plain
    /// recipe's are untagged.
    #[test]
    fn a_structural_recipes_rewrites_are_the_points_of_one_form() {
        let memory = SearchMemory::default();
        for (file, kernel, recipe) in
            [("softmax.cu", "softmax_rows", "WarpUnits"), ("elementwise_fp64.cu", "elementwise", "GridStrideMap")]
        {
            let source = bench_kernel(file);
            let ctx = root(&source, &[], &memory, 2);
            let proposals = RecipeProposer::new(kernel).propose(&ctx);
            let form: Vec<&Proposal> = proposals.iter().filter(|p| p.recipe == recipe).collect();
            assert!(form.len() > 2, "{file}: {recipe} gives every point: {}", form.len());
            let mut points = HashSet::new();
            for p in &form {
                let tag =
                    p.tag.as_ref().unwrap_or_else(|| panic!("{file}: {} untagged", p.note.as_deref().unwrap_or("")));
                assert_eq!(tag.form, recipe);
                assert!(tag.point.get("block").is_some() && tag.point.get("grid").is_some(), "{file}: {}", tag.point);
                assert!(tag.lower_bound_s.is_some_and(|lb| lb > 0.0 && lb.is_finite()), "{file}: {tag:?}");
                assert!(points.insert(tag.point.to_string()), "{file}: two proposals at {}", tag.point);
            }
            let forms: HashSet<&str> =
                proposals.iter().map(|p| p.tag.as_ref().map_or(p.recipe.as_str(), |t| t.form.as_str())).collect();
            assert_eq!(forms.len(), 2, "{file}: two proposals wanted, a form counts once: {forms:?}");
            eprintln!(
                "{file}: {}",
                form.iter().map(|p| p.tag.as_ref().unwrap().point.to_string()).collect::<Vec<_>>().join(" | ")
            );
        }
    }

    #[test]
    fn one_node_expansion_parses_the_nodes_file_once() {
        let (proposals, tally) = count_parses(|| expand(ROWS));
        assert!(proposals.iter().any(|p| p.recipe == "WarpUnits"), "a structural rewrite is proposed");
        assert!(proposals.len() > 5, "every tier proposes: {}", proposals.len());
        assert_eq!(tally.of(ROWS), 1, "the node's file is parsed once for {} recipes", all().len());
        // Each recipe parsing on its own (the search outside an expansion) reads the file many times over.
        let (_, apart) = count_parses(|| {
            for r in all() {
                r.rewrite(ROWS, "l2_normalize");
            }
        });
        assert!(apart.of(ROWS) > all().len(), "without the scope: {} parses", apart.of(ROWS));
        eprintln!(
            "one expansion: {} parses of the node's file, {} in all; recipes apart: {} of the file, {} in all",
            tally.of(ROWS),
            tally.total(),
            apart.of(ROWS),
            apart.total()
        );
    }

    /// `KP_POINTS=FILE:KERNEL cargo test -p kernelpro-recipes --lib show_points -- --ignored --nocapture`
    /// prints the root's proposals for a kernel, each with its point and roofline bound: why the
    /// search would or would not evaluate a form (its bound against the best verified time).
    #[test]
    #[ignore = "a tool: KP_POINTS=FILE:KERNEL"]
    fn show_points() {
        let arg = std::env::var("KP_POINTS").expect("KP_POINTS=FILE:KERNEL");
        let (file, kernel) = arg.rsplit_once(':').expect("KP_POINTS=FILE:KERNEL");
        let source = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let memory = SearchMemory::default();
        let ctx = root(&source, &[], &memory, 64);
        for p in RecipeProposer::new(kernel).propose(&ctx) {
            let tag = p.tag.as_ref();
            let point = tag.map(|t| t.point.to_string()).unwrap_or_default();
            let bound = tag.and_then(|t| t.lower_bound_s).map_or(String::new(), |s| format!("{:.3} ms", s * 1e3));
            eprintln!("{} {point} {bound}", p.recipe);
        }
    }
}
