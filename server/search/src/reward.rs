//! Log-calibrated rewards: a few huge speedups cannot dominate the search.

use crate::evaluate::{Outcome, OutcomeKind};
use serde::{Deserialize, Serialize};

/// Rewards: ln(speedup) clipped to `[min, max]`, and a fixed penalty per failure kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rewards {
    pub min: f64,
    pub max: f64,
    pub compile_error: f64,
    pub wrong_output: f64,
    pub timeout: f64,
    pub crash: f64,
}

impl Default for Rewards {
    fn default() -> Self {
        Rewards {
            min: 0.1f64.ln(),
            max: 20f64.ln(),
            // Compile errors are the cheapest to fix; crashes and hangs the least promising.
            compile_error: -1.0,
            wrong_output: -1.2,
            timeout: -1.5,
            crash: -2.0,
        }
    }
}

impl Rewards {
    pub fn reward(&self, outcome: &Outcome, speedup: Option<f64>) -> f64 {
        match outcome.kind() {
            OutcomeKind::Ok => speedup.map_or(self.min, |s| s.ln().clamp(self.min, self.max)),
            OutcomeKind::CompileError => self.compile_error,
            OutcomeKind::WrongOutput => self.wrong_output,
            OutcomeKind::Timeout => self.timeout,
            OutcomeKind::Crash => self.crash,
        }
    }
}
