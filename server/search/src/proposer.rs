//! The proposer side: what it is shown and what it returns.

use crate::evaluate::FindingNote;
use crate::memory::SearchMemory;
use crate::point::Tag;
use crate::tree::NodeId;

/// Everything a proposer sees about the node it expands.
#[derive(Debug, Clone, Copy)]
pub struct ProposeContext<'a> {
    pub parent: NodeId,
    pub source: &'a str,
    pub depth: usize,
    /// Speedup of the parent over the original; `None` when the parent failed.
    pub speedup: Option<f64>,
    pub best_speedup: f64,
    /// The parent's findings (empty for a failed parent).
    pub findings: &'a [FindingNote],
    /// The parent's error text when it failed: the child is then a debug attempt.
    pub failure: Option<&'a str>,
    pub memory: &'a SearchMemory,
    /// How many proposals are wanted; more are ignored, except that the points
    /// of one form (proposals with the same [`Tag::form`]) count as one.
    pub wanted: usize,
}

/// One rewritten source.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub source: String,
    /// Which rewrite produced it (recipe name, or `llm`).
    pub recipe: String,
    /// The finding (tool name) it answers, if any.
    pub answers: Option<String>,
    /// Free-form note kept in the search memory's notes (e.g. a useful file path).
    pub note: Option<String>,
    /// The form and parameter point this proposal is of, with its roofline prior:
    /// a node's proposals of one form become one child and its other points.
    pub tag: Option<Tag>,
}

impl Proposal {
    pub fn new(source: impl Into<String>, recipe: impl Into<String>) -> Self {
        Proposal { source: source.into(), recipe: recipe.into(), answers: None, note: None, tag: None }
    }

    pub fn answering(mut self, tool: impl Into<String>) -> Self {
        self.answers = Some(tool.into());
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    pub fn with_tag(mut self, tag: Tag) -> Self {
        self.tag = Some(tag);
        self
    }
}

/// Produces candidate rewrites of a node's source.
pub trait Proposer {
    fn name(&self) -> &str;
    fn propose(&mut self, ctx: &ProposeContext) -> Vec<Proposal>;

    /// What [`Proposer::propose`] would return for `ctx`, without changing the
    /// proposer's state, when that is cheap (rewrites of the text, no network):
    /// the search compiles them ahead. The default proposes nothing ahead.
    fn ahead(&self, _ctx: &ProposeContext) -> Vec<Proposal> {
        Vec::new()
    }
}

impl<P: Proposer + ?Sized> Proposer for Box<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn propose(&mut self, ctx: &ProposeContext) -> Vec<Proposal> {
        (**self).propose(ctx)
    }
    fn ahead(&self, ctx: &ProposeContext) -> Vec<Proposal> {
        (**self).ahead(ctx)
    }
}
