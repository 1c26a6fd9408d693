//! Evaluators for the search: the GPU harness (compile, verify against the
//! original on identical inputs, time, energy) and a stub for tests and demos
//! that compiles for real but invents the timing.

use crate::guard::check_candidate;
use kernelpro_core::analysis::Analyzer;
use kernelpro_core::harness::{self, KernelSource, Prepared, RunOptions};
use kernelpro_core::settings::Settings;
use kernelpro_gpu::HarnessError;
use kernelpro_search::{Evaluator, FindingNote, Outcome};
use kernelpro_source::SourceFile;
use std::path::PathBuf;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

/// What every evaluator shares: the original, how to compile, the kernel.
pub struct Context {
    pub path: PathBuf,
    pub original: String,
    pub original_src: SourceFile,
    pub kernel: String,
    pub settings: Settings,
    pub analyzer: Analyzer,
    pub handle: Handle,
    pub cancel: CancellationToken,
}

impl Context {
    fn prepare(&self, source: &str) -> Result<Prepared, String> {
        let src = KernelSource { path: self.path.clone(), text: source.to_string(), kernel: Some(self.kernel.clone()) };
        let settings = cute_settings(source, &self.settings)?;
        self.handle.block_on(harness::prepare(&src, &settings, &self.analyzer, &self.cancel))
    }

    /// Compile and guard a candidate; the original is always accepted.
    fn admit(&self, source: &str) -> Result<Prepared, Outcome> {
        if source != self.original {
            check_candidate(&self.original, &self.original_src, source, &self.kernel).map_err(|why| Outcome::WrongOutput(format!("rejected: {why}")))?;
        }
        self.prepare(source).map_err(Outcome::CompileError)
    }
}

/// Findings of a compiled version, as the search hands them to proposers.
pub fn notes(p: &Prepared) -> Vec<FindingNote> {
    p.analysis
        .findings
        .iter()
        .filter(|f| f.kernel.is_none() || f.kernel.as_deref() == Some(p.job.launch.kernel.as_str()))
        .filter_map(|f| Some(FindingNote { tool: f.code.clone()?, guidance: f.guidance.clone().unwrap_or_else(|| f.message.clone()) }))
        .collect()
}

pub struct GpuEvaluator {
    pub ctx: Context,
    pub run: RunOptions,
    /// The original, compiled once: the reference for every candidate.
    reference: Option<Prepared>,
    /// Input seed used during the search (the held-out seed is never used here).
    pub search_seed: u64,
}

impl GpuEvaluator {
    pub fn new(ctx: Context, run: RunOptions, search_seed: u64) -> Self {
        GpuEvaluator { ctx, run, reference: None, search_seed }
    }

    /// Runs `candidate` against the original with inputs from `seed`.
    pub fn verify(&self, candidate: &Prepared, seed: u64) -> Outcome {
        let Some(reference) = &self.reference else { return Outcome::Crash("the original was not run first".into()) };
        self.measure(candidate, Some(reference), seed)
    }

    /// Times `kernel` with inputs from `seed`, checking its outputs against
    /// `reference` (run on the same inputs) when one is given.
    fn measure(&self, kernel: &Prepared, reference: Option<&Prepared>, seed: u64) -> Outcome {
        let with_seed = |p: &Prepared| {
            let mut job = p.job.clone();
            job.launch.seed = seed;
            job
        };
        let job = with_seed(kernel);
        let reference = reference.map(with_seed);
        match self.ctx.handle.block_on(harness::run(&job, reference.as_ref(), &self.ctx.settings, &self.run)) {
            Err(HarnessError::Timeout { .. }) => Outcome::Timeout,
            Err(e) => Outcome::Crash(e.to_string()),
            Ok(r) if !r.correct() => {
                let worst: Vec<String> = r.comparison.iter().filter(|c| c.bad > 0).map(|c| format!("{}: {} of {} elements wrong, worst {:?}", c.name, c.bad, c.count, c.worst)).collect();
                Outcome::WrongOutput(worst.join("; "))
            }
            Ok(r) => {
                let t = &r.kernel.timing;
                Outcome::Ok {
                    time_s: t.median_ms / 1e3,
                    energy_j: r.kernel.energy.as_ref().ok().map(|e| e.joules_per_launch),
                    noise: (2.0 * t.stddev_ms).max(0.01 * t.median_ms) / 1e3,
                    findings: notes(kernel),
                }
            }
        }
    }

    pub fn admit(&self, source: &str) -> Result<Prepared, Outcome> {
        self.ctx.admit(source)
    }
}

impl Evaluator for GpuEvaluator {
    fn evaluate(&mut self, source: &str) -> Outcome {
        let prepared = match self.ctx.admit(source) {
            Ok(p) => p,
            Err(o) => return o,
        };
        if source == self.ctx.original {
            // The baseline: the original alone, on the search seed; it is then the reference.
            let outcome = self.measure(&prepared, None, self.search_seed);
            self.reference = Some(prepared);
            return outcome;
        }
        self.verify(&prepared, self.search_seed)
    }
}

/// `stub:SPEEDUP`: compiles and guards every candidate for real, then reports
/// the original at 1 ms and every admitted candidate SPEEDUP times faster.
pub struct StubEvaluator {
    pub ctx: Context,
    pub speedup: f64,
}

impl Evaluator for StubEvaluator {
    fn evaluate(&mut self, source: &str) -> Outcome {
        match self.ctx.admit(source) {
            Err(o) => o,
            Ok(p) => {
                let ms = if source == self.ctx.original { 1.0 } else { 1.0 / self.speedup };
                Outcome::Ok { time_s: ms / 1e3, energy_j: None, noise: 1e-6, findings: notes(&p) }
            }
        }
    }
}

/// CuTe/CUTLASS candidates need C++17, relaxed constexpr, the CUTLASS headers,
/// and `sm_90a` on Hopper for WGMMA and TMA.
fn cute_settings(source: &str, settings: &Settings) -> Result<Settings, String> {
    if !(source.contains("#include <cute/") || source.contains("#include <cutlass/") || source.contains("#include \"cute/")) {
        return Ok(settings.clone());
    }
    let include = kernelpro_cute::cutlass_include(None, &kernelpro_core::toolchain::Env::process().roots)?;
    let mut s = settings.clone();
    // The compile step sets the architecture itself.
    s.extra_flags.extend(kernelpro_cute::cute_flags(&s.arch, &include).into_iter().filter(|f| !f.starts_with("-arch=")));
    s.arch = kernelpro_cute::cute_arch(&s.arch);
    Ok(s)
}
