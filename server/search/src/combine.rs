//! Ways to combine several proposers into one.

use crate::proposer::{Proposal, ProposeContext, Proposer};

/// Asks its proposers in turn, starting one further along at each call, until
/// enough proposals are collected; so each proposer leads equally often.
pub struct RoundRobin {
    proposers: Vec<Box<dyn Proposer>>,
    next: usize,
}

impl RoundRobin {
    pub fn new(proposers: Vec<Box<dyn Proposer>>) -> Self {
        RoundRobin { proposers, next: 0 }
    }
}

impl Proposer for RoundRobin {
    fn name(&self) -> &str {
        "round-robin"
    }

    fn propose(&mut self, ctx: &ProposeContext) -> Vec<Proposal> {
        let n = self.proposers.len();
        let order: Vec<usize> = (0..n).map(|i| (self.next + i) % n).collect();
        self.next = (self.next + 1) % n.max(1);
        collect(&mut self.proposers, &order, ctx)
    }

    fn ahead(&self, ctx: &ProposeContext) -> Vec<Proposal> {
        let n = self.proposers.len();
        let order: Vec<usize> = (0..n).map(|i| (self.next + i) % n).collect();
        collect_ahead(&self.proposers, &order, ctx)
    }
}

/// Asks first the proposers whose tools appear most among the parent's findings,
/// then the rest (in their given order); a proposer with no tools is a fallback.
pub struct ByFindings {
    tools: Vec<Vec<String>>,
    proposers: Vec<Box<dyn Proposer>>,
}

impl ByFindings {
    /// Each proposer with the finding tools (e.g. `Uncoalesced`) it answers.
    pub fn new(proposers: Vec<(Vec<String>, Box<dyn Proposer>)>) -> Self {
        let (tools, proposers) = proposers.into_iter().unzip();
        ByFindings { tools, proposers }
    }
}

impl Proposer for ByFindings {
    fn name(&self) -> &str {
        "by-findings"
    }

    fn propose(&mut self, ctx: &ProposeContext) -> Vec<Proposal> {
        let matches = |tools: &[String]| ctx.findings.iter().filter(|f| tools.contains(&f.tool)).count();
        let mut order: Vec<usize> = (0..self.proposers.len()).collect();
        // Stable sort: equal matches keep the given order.
        order.sort_by_key(|&i| std::cmp::Reverse(matches(&self.tools[i])));
        collect(&mut self.proposers, &order, ctx)
    }

    fn ahead(&self, ctx: &ProposeContext) -> Vec<Proposal> {
        let matches = |tools: &[String]| ctx.findings.iter().filter(|f| tools.contains(&f.tool)).count();
        let mut order: Vec<usize> = (0..self.proposers.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(matches(&self.tools[i])));
        collect_ahead(&self.proposers, &order, ctx)
    }
}

fn collect_ahead(proposers: &[Box<dyn Proposer>], order: &[usize], ctx: &ProposeContext) -> Vec<Proposal> {
    let mut out = Vec::new();
    for &i in order {
        if out.len() >= ctx.wanted {
            break;
        }
        let rest = ProposeContext { wanted: ctx.wanted - out.len(), ..*ctx };
        out.extend(proposers[i].ahead(&rest).into_iter().take(rest.wanted));
    }
    out
}

fn collect(proposers: &mut [Box<dyn Proposer>], order: &[usize], ctx: &ProposeContext) -> Vec<Proposal> {
    let mut out = Vec::new();
    for &i in order {
        if out.len() >= ctx.wanted {
            break;
        }
        let rest = ProposeContext { wanted: ctx.wanted - out.len(), ..*ctx };
        out.extend(proposers[i].propose(&rest).into_iter().take(rest.wanted));
    }
    out
}
