//! A synthetic, deceptive landscape for tests and benchmarks of the search.
//!
//! A source is a path of moves, `moves:` followed by comma-separated digits
//! `0..BRANCHING`. The first move picks a branch:
//! - moves 1..: the greedy trap, 1.1x at once, climbing to a 1.3x plateau
//!   (with a small deterministic jitter so greedy keeps finding "better"
//!   nodes); a third of its later moves fail to compile;
//! - move 0: the deceptive branch, first a regression to 0.9x, then 1.6x,
//!   2.8x and 5x along "good" moves (half of them); other moves there fail to
//!   compile or are slower, and nothing below them recovers.

use crate::evaluate::{Evaluator, FindingNote, Outcome};
use crate::memory::SearchMemory;
use crate::proposer::{Proposal, ProposeContext, Proposer};
use crate::rng::SplitMix64;

pub const BRANCHING: u8 = 6;
const ORIGINAL_TIME_S: f64 = 1e-3;
/// Speedups reached along good moves of the deceptive branch, by depth from 1.
const DECEPTIVE_LEVELS: [f64; 4] = [0.9, 1.6, 2.8, 5.0];
const PLATEAU: f64 = 1.3;

pub fn source(moves: &[u8]) -> String {
    let digits: Vec<String> = moves.iter().map(u8::to_string).collect();
    format!("moves:{}", digits.join(","))
}

pub fn parse(source: &str) -> Vec<u8> {
    let list = source.strip_prefix("moves:").unwrap_or("");
    list.split(',').filter_map(|m| m.trim().parse().ok()).collect()
}

/// The speedup of a path, or `None` if it fails to compile.
pub fn speedup(moves: &[u8]) -> Option<f64> {
    match moves.split_first() {
        None => Some(1.0),
        Some((0, rest)) => {
            let mut s = DECEPTIVE_LEVELS[0];
            let mut on_track = true;
            for (i, &m) in rest.iter().enumerate() {
                let depth = i + 2;
                if on_track && (m as usize + depth) & 1 == 0 {
                    s = DECEPTIVE_LEVELS[depth.min(DECEPTIVE_LEVELS.len()) - 1];
                } else if m % 3 == 1 {
                    return None;
                } else {
                    s *= 0.85;
                    on_track = false;
                }
            }
            Some(s)
        }
        Some(_) => {
            // A third of the moves past the first fail to compile, as rewrites do.
            if moves.iter().enumerate().skip(1).any(|(depth, &m)| m as usize % 3 == depth % 3) {
                return None;
            }
            let climbed = (1.0 + 0.1 * moves.len() as f64).min(PLATEAU);
            Some(climbed * (1.0 + 0.03 * jitter(moves)))
        }
    }
}

/// Deterministic value in [-1, 1] per path.
fn jitter(moves: &[u8]) -> f64 {
    let seed = moves.iter().fold(0x1234_5678u64, |h, &m| (h ^ m as u64).wrapping_mul(0x0100_0000_01b3));
    SplitMix64::new(seed).unit() * 2.0 - 1.0
}

/// Times a path as `1 ms / speedup`, with energy proportional to time.
#[derive(Debug, Default)]
pub struct LandscapeEvaluator {
    /// Sources evaluated, in order.
    pub evaluated: Vec<String>,
}

impl Evaluator for LandscapeEvaluator {
    fn evaluate(&mut self, source: &str) -> Outcome {
        self.evaluated.push(source.to_owned());
        let moves = parse(source);
        match speedup(&moves) {
            Some(s) => {
                let time_s = ORIGINAL_TIME_S / s;
                let guidance = format!("{} moves deep", moves.len());
                Outcome::Ok {
                    time_s,
                    energy_j: Some(time_s * 300.0),
                    noise: time_s * 0.005,
                    findings: vec![FindingNote::new("Depth", guidance)],
                }
            }
            None => Outcome::CompileError(format!("error: move {} does not apply", moves.last().unwrap())),
        }
    }
}

/// Proposes random one-move extensions that the memory has not seen yet.
#[derive(Debug)]
pub struct MoveProposer {
    rng: SplitMix64,
}

impl MoveProposer {
    pub fn new(seed: u64) -> Self {
        MoveProposer { rng: SplitMix64::new(seed ^ 0x5eed) }
    }
}

impl Proposer for MoveProposer {
    fn name(&self) -> &str {
        "moves"
    }

    fn propose(&mut self, ctx: &ProposeContext) -> Vec<Proposal> {
        let parent = parse(ctx.source);
        let mut fresh: Vec<u8> = (0..BRANCHING).filter(|&m| !tried(ctx.memory, &parent, m)).collect();
        let mut out = Vec::new();
        while out.len() < ctx.wanted && !fresh.is_empty() {
            let m = fresh.swap_remove(self.rng.below(fresh.len()));
            let mut child = parent.clone();
            child.push(m);
            out.push(Proposal::new(source(&child), format!("move-{m}")));
        }
        out
    }
}

fn tried(memory: &SearchMemory, parent: &[u8], m: u8) -> bool {
    let mut child = parent.to_vec();
    child.push(m);
    memory.lookup(&source(&child)).is_some()
}
