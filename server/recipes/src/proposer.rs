//! The recipes behind the search's `Proposer` trait.

use crate::{Recipe, all};
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

    /// Recipe indices with the tool each answers: recipes answering the
    /// findings first (in the findings' order), then the rest.
    fn order(&self, ctx: &ProposeContext) -> Vec<(usize, Option<String>)> {
        let mut order: Vec<(usize, Option<String>)> = Vec::new();
        for f in ctx.findings {
            for (i, r) in self.recipes.iter().enumerate() {
                if r.answers().contains(&f.tool.as_str()) && !order.iter().any(|(j, _)| *j == i) {
                    order.push((i, Some(f.tool.clone())));
                }
            }
        }
        for i in 0..self.recipes.len() {
            if !order.iter().any(|(j, _)| *j == i) {
                order.push((i, None));
            }
        }
        order
    }
}

impl Proposer for RecipeProposer {
    fn name(&self) -> &str {
        "recipes"
    }

    /// Round-robin over the ordered recipes (each one's first rewrite, then
    /// each one's second, ...), skipping sources already tried or proposed.
    fn propose(&mut self, ctx: &ProposeContext) -> Vec<Proposal> {
        let per_recipe: Vec<_> = self
            .order(ctx)
            .into_iter()
            .map(|(i, answers)| (self.recipes[i].name(), answers, self.recipes[i].rewrite(ctx.source, &self.kernel)))
            .collect();
        // Exact text, not the memory's normalized hash: that hash drops comments, and a tune reorder lives in one.
        let mut seen: HashSet<&str> = HashSet::from([ctx.source]);
        let mut out = Vec::new();
        let rounds = per_recipe.iter().map(|(_, _, r)| r.len()).max().unwrap_or(0);
        for round in 0..rounds {
            for (name, answers, rewrites) in &per_recipe {
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
        out
    }
}
