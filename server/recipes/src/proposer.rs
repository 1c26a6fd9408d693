//! The recipes behind the search's `Proposer` trait.

use crate::{Recipe, Tier, all};
use kernelpro_search::{Proposal, ProposeContext, Proposer};
use std::collections::HashSet;

pub struct RecipeProposer {
    kernel: String,
    recipes: Vec<Box<dyn Recipe>>,
}

impl RecipeProposer {
    pub fn new(kernel: &str) -> RecipeProposer {
        RecipeProposer { kernel: kernel.to_string(), recipes: all() }
    }

    /// Adds a recipe that lives in another crate (the CuTe GEMM recipe).
    pub fn with(mut self, recipe: Box<dyn Recipe>) -> RecipeProposer {
        self.recipes.push(recipe);
        self
    }

    /// Only the recipes named (a finding's promised rewrites, for its quick fix).
    pub fn only(mut self, names: &[String]) -> RecipeProposer {
        self.recipes.retain(|r| names.iter().any(|n| n == r.name()));
        self
    }

    /// Recipe indices with the tool each answers, tier by tier (structural
    /// first, micro-optimizations last); within a tier, the expert forms of
    /// the kernel's parallel pattern (the kernel model's) first, then recipes
    /// answering the findings (in the findings' order), then the rest.
    fn order(&self, ctx: &ProposeContext) -> Vec<(usize, Option<String>)> {
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
        let pattern = crate::kernel::Kernel::find(ctx.source, &self.kernel)
            .and_then(|k| k.model())
            .and_then(|m| m.pattern())
            .map(|r| r.pattern);
        order.sort_by_key(|(i, _)| {
            let r = &self.recipes[*i];
            (r.tier(), !pattern.is_some_and(|p| r.expert_for().contains(&p)))
        });
        order
    }
}

/// A structural rewrite of a float kernel that computes in FP64 only through double literals and
/// math calls (`0.5 * v`, `tanh(x)`) comes first with float math as well: the expert form of a
/// float kernel computes in float, and FP64 runs at a fraction of FP32's rate (a GELU map: 1.8x
/// on the H100). The plain rewrites follow, in case the float math misses the tolerance.
fn with_float_math_first(tier: Tier, kernel: &str, rewrites: Vec<crate::Rewrite>) -> Vec<crate::Rewrite> {
    if tier != Tier::Structural {
        return rewrites;
    }
    let float = crate::FloatLiterals;
    let composed: Vec<crate::Rewrite> = rewrites
        .iter()
        .filter_map(|rw| {
            let f = float.rewrite(&rw.source, kernel).into_iter().next()?;
            Some(crate::Rewrite { source: f.source, note: format!("{}; {}", rw.note, f.note) })
        })
        .collect();
    composed.into_iter().chain(rewrites).collect()
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
        let per_recipe: Vec<_> = self
            .order(ctx)
            .into_iter()
            .map(|(i, answers)| {
                (
                    self.recipes[i].tier(),
                    self.recipes[i].name(),
                    answers,
                    with_float_math_first(
                        self.recipes[i].tier(),
                        &self.kernel,
                        crate::fresh::with_fresh_names(ctx.source, &self.kernel, |t| {
                            self.recipes[i].rewrite(t, &self.kernel)
                        }),
                    ),
                )
            })
            .collect();
        // Exact text, as well as the memory's normalized one (which keeps launch-spec comments).
        let mut seen: HashSet<&str> = HashSet::from([ctx.source]);
        let mut out = Vec::new();
        let mut tiers: Vec<Tier> = per_recipe.iter().map(|r| r.0).collect();
        tiers.dedup();
        for tier in tiers {
            let in_tier: Vec<_> = per_recipe.iter().filter(|r| r.0 == tier).map(|(_, n, a, r)| (n, a, r)).collect();
            let rounds = in_tier.iter().map(|(_, _, r)| r.len()).max().unwrap_or(0);
            for round in 0..rounds {
                for &(name, answers, rewrites) in &in_tier {
                    let Some(rw) = rewrites.get(round) else { continue };
                    if out.len() == ctx.wanted {
                        return out;
                    }
                    if ctx.memory.lookup(&rw.source).is_some() || !seen.insert(&rw.source) {
                        continue;
                    }
                    let mut p = Proposal::new(rw.source.clone(), *name).with_note(rw.note.clone());
                    if let Some(tool) = answers {
                        p = p.answering(tool.clone());
                    }
                    out.push(p);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelpro_search::{FindingNote, NodeId, SearchMemory};
    use kernelpro_source::parsed::count_parses;

    /// A row walk with structural and micro rewrites: every recipe reads the node's file.
    const ROWS: &str = include_str!("../fixtures/rows_norm.cu");

    fn expand(source: &str) -> Vec<Proposal> {
        let findings = [FindingNote::new("RowWalk", "")];
        let memory = SearchMemory::default();
        let ctx = ProposeContext {
            parent: NodeId(0),
            source,
            depth: 0,
            speedup: Some(1.0),
            best_speedup: 1.0,
            findings: &findings,
            failure: None,
            memory: &memory,
            wanted: 64,
        };
        RecipeProposer::new("l2_normalize").propose(&ctx)
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
}
