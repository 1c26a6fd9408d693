//! What an evaluator reports about one candidate source.

use serde::{Deserialize, Serialize};

/// One finding of the static or profile tools, reduced to what a proposer needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingNote {
    /// The tool that raised it (e.g. `Uncoalesced`, `RegisterSpill`).
    pub tool: String,
    /// Its guidance text: what to change.
    pub guidance: String,
}

impl FindingNote {
    pub fn new(tool: impl Into<String>, guidance: impl Into<String>) -> Self {
        FindingNote { tool: tool.into(), guidance: guidance.into() }
    }
}

/// The result of compiling, verifying and timing one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Outcome {
    /// Verified correct. `noise` is the uncertainty of `time_s`, in seconds.
    Ok {
        time_s: f64,
        energy_j: Option<f64>,
        noise: f64,
        findings: Vec<FindingNote>,
    },
    CompileError(String),
    WrongOutput(String),
    Timeout,
    Crash(String),
}

/// The kind of an [`Outcome`], without its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    Ok,
    CompileError,
    WrongOutput,
    Timeout,
    Crash,
}

impl Outcome {
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Ok { .. } => OutcomeKind::Ok,
            Outcome::CompileError(_) => OutcomeKind::CompileError,
            Outcome::WrongOutput(_) => OutcomeKind::WrongOutput,
            Outcome::Timeout => OutcomeKind::Timeout,
            Outcome::Crash(_) => OutcomeKind::Crash,
        }
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok { .. })
    }

    pub fn time_s(&self) -> Option<f64> {
        match self {
            Outcome::Ok { time_s, .. } => Some(*time_s),
            _ => None,
        }
    }

    pub fn findings(&self) -> &[FindingNote] {
        match self {
            Outcome::Ok { findings, .. } => findings,
            _ => &[],
        }
    }

    /// The error text of a failed candidate, handed to the proposer of its debug child.
    pub fn failure(&self) -> Option<&str> {
        match self {
            Outcome::Ok { .. } => None,
            Outcome::CompileError(m) | Outcome::WrongOutput(m) | Outcome::Crash(m) => Some(m),
            Outcome::Timeout => Some("timed out"),
        }
    }
}

/// Compiles, verifies and times a candidate source.
pub trait Evaluator {
    fn evaluate(&mut self, source: &str) -> Outcome;

    /// Evaluates independent candidates of one iteration; one outcome per
    /// source, in order. An evaluator with several devices runs them
    /// concurrently; the default evaluates them one by one. The search records
    /// the outcomes in proposal order, so its result does not depend on how
    /// the batch was run.
    fn evaluate_batch(&mut self, sources: &[&str]) -> Vec<Outcome> {
        sources.iter().map(|s| self.evaluate(s)).collect()
    }

    /// How many candidates it evaluates at once: the search hands
    /// [`Evaluator::evaluate_batch`] at most this many. With 1 (the default)
    /// nothing is evaluated ahead; with more, a candidate whose parent an
    /// earlier outcome of the same batch pruned is evaluated but not recorded,
    /// exactly as if it had never been proposed.
    fn parallelism(&self) -> usize {
        1
    }

    /// Candidates the search may ask for soon (a node's proposals beyond the
    /// ones it takes now): an evaluator may compile them ahead, while the
    /// GPU times the current batch. A hint only; the default ignores it.
    fn prefetch(&mut self, _sources: &[&str]) {}

    /// Whether the search should evaluate other candidates before `source`
    /// (one it is about to evaluate): its compile is a slow one still running,
    /// which the evaluator then keeps going (starting it if it was not). The
    /// search evaluates the batch's others now and `source` once its compile
    /// is done (it asks again each iteration), or when nothing else is left.
    /// The default: never.
    fn defer(&mut self, _source: &str) -> bool {
        false
    }

    /// The candidates the search is about to hand [`Evaluator::evaluate_batch`]
    /// (before it asks the proposer for the guesses it prefetches): an
    /// evaluator may start compiling them now. Called only where
    /// [`Evaluator::lookahead`] is above 0; the default does nothing.
    fn begin(&mut self, _sources: &[&str]) {}

    /// How many proposals beyond the ones it evaluates now the search should
    /// hand [`Evaluator::prefetch`] (0, the default: none are asked for).
    fn lookahead(&self) -> usize {
        0
    }
}
