//! "Optimize this kernel": a Monte Carlo tree search over rewrites from the
//! built-in recipes, each candidate compiled, guarded, verified against the
//! original on identical inputs and timed; the best is re-verified on held-out
//! inputs and offered as one edit of the kernel's region.
//!
//! Call [`optimize`] from a blocking thread: evaluators drive async compiles
//! through the given runtime handle.
#![forbid(unsafe_code)]

mod disagreement;
mod evaluator;
mod guard;
mod launch_site;
mod region;

pub use evaluator::{
    CANDIDATE_TIMING_MS, Context, Evaluate, GpuEvaluator, PipelineStats, StubEvaluator, cute_settings,
};
pub use guard::{check_candidate, launch_changes};
pub use launch_site::{SiteUpdate, update_sites};
pub use region::{LineEdit, edit_within_region, kernel_region};

use kernelpro_config::settings::Settings;
use kernelpro_core::analysis::Analyzer;
use kernelpro_measure::harness::RunOptions;
use kernelpro_measure::profiling::{Exports, FileProfileRequest, ProfileReport, analyze_exports, profile_file};
use kernelpro_profile::Thresholds;
use kernelpro_search::{
    Budget, Evaluator, FindingNote, MemoryEntry, Outcome, Progress, Proposer, Search, SearchConfig, Strategy,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
pub struct OptimizeRequest {
    pub path: PathBuf,
    pub text: String,
    pub kernel: String,
    pub settings: Settings,
    pub strategy: Strategy,
    pub seed: u64,
    /// The `kernelpro` executable that serves as the GPU worker.
    pub exe: PathBuf,
    /// From the environment or the editor's secret storage; never from settings.
    pub llm_key: Option<kernelpro_llm::ApiKey>,
    /// Recorded ncu pages of the original (`kernelpro profile --save-exports`)
    /// read instead of profiling it again: a profile taken once serves several searches.
    pub profile_import: Option<PathBuf>,
    /// Only these built-in recipes (a finding's promised rewrites, for its quick fix), without
    /// the LLM; `None`: every recipe.
    pub recipes: Option<Vec<String>>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct StepReport {
    pub recipe: String,
    pub answers: Option<String>,
    pub speedup: Option<f64>,
    /// The parameter point of the rewrite's form (`block=256 grid=2048 vec=1`), when it offered several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<kernelpro_search::Point>,
}

/// `PrefetchL2 (answers WarpStall) → 1.23x`, `WarpUnits [block=256 grid=2048] → 3.10x`: one step
/// of the best path, as the CLI and the hover show it.
impl std::fmt::Display for StepReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.recipe)?;
        if let Some(p) = &self.point {
            write!(f, " [{p}]")?;
        }
        if let Some(a) = &self.answers {
            write!(f, " (answers {a})")?;
        }
        match self.speedup {
            Some(x) => write!(f, " → {x:.2}x"),
            None => write!(f, " → failed"),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct OptimizeOutcome {
    pub kernel: String,
    /// Over the original, measured (or invented by the stub evaluator).
    pub speedup: f64,
    pub original_ms: f64,
    pub best_ms: Option<f64>,
    pub original_energy_j: Option<f64>,
    pub best_energy_j: Option<f64>,
    /// Input seeds the best candidate was verified on (the last one was never used during the search).
    pub verified_seeds: Vec<u64>,
    pub steps: Vec<StepReport>,
    /// Every candidate the search evaluated, in order, with its outcome: why a
    /// recipe that should have helped did not (wrong output, slower, ...).
    pub tried: Vec<MemoryEntry>,
    /// For each entry of `tried`, which variant it is when its rewrite was
    /// tried more than once (`grid = …; block = 128; on top of WarpUnits`),
    /// else empty: the recipe names stay as they are for scripts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tried_variants: Vec<String>,
    pub evaluations: usize,
    /// Parameter points never evaluated: their roofline lower bound could not beat the best
    /// verified time (none under the stub evaluator).
    pub pruned_by_prior: usize,
    pub stop: String,
    /// The edit of the kernel's region; `None` when nothing beat the original.
    pub edit: Option<LineEdit>,
    /// With a new launch: the edits of the file's own launch sites of the
    /// kernel (outside the region, in the original's lines), applied with `edit`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub launch_site_edits: Vec<LineEdit>,
    pub new_text: Option<String>,
    /// `Apply optimized saxpy: 1.84x faster, verified on 3 seeds`.
    pub title: String,
    /// True when timings came from `optimize.evaluator = "stub:…"`.
    pub stub: bool,
    /// Things the user should know (an LLM that could not be used, ...).
    pub notes: Vec<String>,
    /// GPUs the candidates ran on (the first also ran the baseline; times on
    /// the others are scaled by the original's time there); empty for the stub.
    pub devices: Vec<u32>,
    /// The original's structural findings whose promised rewrites did not apply, with why
    /// (also among `notes`, in words).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_applied: Vec<kernelpro_recipes::WhyNot>,
    /// Where the evaluations' time went (GPU jobs, waits for compiles, workers started).
    pub pipeline: PipelineStats,
}

impl OptimizeOutcome {
    /// Every edit that applying the result makes, in the original's lines:
    /// the kernel's region and the file's launch sites; none without a result.
    pub fn line_edits(&self) -> Vec<LineEdit> {
        let Some(edit) = &self.edit else { return Vec::new() };
        std::iter::once(edit).chain(&self.launch_site_edits).cloned().collect()
    }
}

/// Why a search could not give an answer (a search that found nothing faster
/// is an answer: [`OptimizeOutcome`] with no edit).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptimizeError {
    #[error("optimize.evaluator `{0}`: write stub:SPEEDUP or stub:SPEEDUP:LAUNCH_SPEEDUP, e.g. stub:1.5")]
    BadEvaluator(String),
    #[error("the original kernel could not be compiled for the search: {0}")]
    OriginalCompile(String),
    #[error("the original kernel's output could not be checked: {0}")]
    OriginalOutput(String),
    #[error("the original kernel did not finish within the run timeout")]
    OriginalTimeout,
    #[error("the original kernel failed to run: {0}")]
    OriginalCrash(String),
    #[error("the original kernel could not be measured")]
    OriginalUnmeasured,
    #[error(
        "the time limit ({limit_s} s) ran out while {stage}, before any candidate was evaluated: raise --time (optimize.timeSecs)"
    )]
    TimeUp { limit_s: u64, stage: &'static str },
    #[error("cancelled before the original was measured")]
    Cancelled,
}

/// Who evaluates the candidates: the caller chooses ([`optimize_with`]).
#[derive(Debug, Clone, PartialEq)]
pub enum EvaluatorChoice {
    /// The GPU harness: compiled, verified against the original, timed.
    Gpu,
    /// Compiled and guarded for real, timing invented ([`StubEvaluator`]): tests and demos.
    Stub(StubTiming),
}

/// The stub's invented timing.
#[derive(Debug, Clone, PartialEq)]
pub struct StubTiming {
    /// Every admitted candidate is this much faster than the original.
    pub speedup: f64,
    /// ...or this much, when it changes the launch.
    pub launch_speedup: Option<f64>,
    /// What each simulated GPU job takes (the baseline's too).
    pub gpu_time: Duration,
}

impl EvaluatorChoice {
    /// From `optimize.evaluator`: `gpu`, or `stub:SPEEDUP[:LAUNCH_SPEEDUP]`.
    pub fn from_settings(settings: &Settings) -> Result<EvaluatorChoice, OptimizeError> {
        let kind = &settings.optimize.evaluator;
        let Some(speedups) = kind.strip_prefix("stub:") else { return Ok(EvaluatorChoice::Gpu) };
        let bad = || OptimizeError::BadEvaluator(kind.clone());
        let (speedup, launch_speedup) = match speedups.split_once(':') {
            Some((s, l)) => (s.parse::<f64>().map_err(|_| bad())?, Some(l.parse::<f64>().map_err(|_| bad())?)),
            None => (speedups.parse::<f64>().map_err(|_| bad())?, None),
        };
        Ok(EvaluatorChoice::Stub(StubTiming { speedup, launch_speedup, gpu_time: Duration::ZERO }))
    }
}

/// Runs the search on the calling (blocking) thread with the evaluator the
/// settings name (`optimize.evaluator`); see [`optimize_with`].
pub fn optimize(
    req: &OptimizeRequest,
    handle: Handle,
    token: CancellationToken,
    progress: impl FnMut(&Progress),
) -> Result<OptimizeOutcome, OptimizeError> {
    let evaluator = EvaluatorChoice::from_settings(&req.settings)?;
    optimize_with(req, evaluator, handle, token, progress)
}

/// Time kept after the search for the held-out checks of the best candidates:
/// 15% of the limit, 2 to 30 s, never more than half of it.
fn held_out_reserve(limit: Duration) -> Duration {
    limit.mul_f64(0.15).clamp(Duration::from_secs(2), Duration::from_secs(30)).min(limit / 2)
}

/// Runs the search on the calling (blocking) thread with `evaluator`.
///
/// `optimize.timeSecs` bounds the whole run, the original's profile and
/// baseline included: the profile gets at most a third of it; the search stops
/// at the limit (less a reserve for the held-out checks, with the GPU
/// evaluator), its compiles and GPU jobs in flight killed, and each job is
/// given no more time than is left. The answer is the best candidate verified
/// by then, or says that none was and how far the search got. `token` stops it
/// likewise at once with the best so far, and kills the child processes and
/// the LLM request in flight.
pub fn optimize_with(
    req: &OptimizeRequest,
    evaluator: EvaluatorChoice,
    handle: Handle,
    token: CancellationToken,
    mut progress: impl FnMut(&Progress),
) -> Result<OptimizeOutcome, OptimizeError> {
    let started = Instant::now();
    let limit = Duration::from_secs(req.settings.optimize.time_secs.max(1));
    let deadline = started + limit;
    let _span = tracing::debug_span!("optimize", kernel = %req.kernel, limit_s = limit.as_secs()).entered();
    let cancel = Arc::new(AtomicBool::new(false));
    let _watch = FlagOnCancel::spawn(&handle, token.clone(), cancel.clone());
    let stub = matches!(evaluator, EvaluatorChoice::Stub(_));
    // The search's work in flight is killed when its time is up; the held-out checks have their own.
    let search_end = deadline - if stub { Duration::ZERO } else { held_out_reserve(limit) };
    let search_token = token.child_token();
    let _search_timer = CancelAt::spawn(&handle, search_token.clone(), search_end);
    let ctx = Context {
        path: req.path.clone(),
        original: req.text.clone(),
        original_src: kernelpro_source::parse(&req.text),
        kernel: req.kernel.clone(),
        settings: req.settings.clone(),
        analyzer: Analyzer::default(),
        handle: handle.clone(),
        cancel: search_token.clone(),
    };
    let config = SearchConfig {
        strategy: req.strategy,
        seed: req.seed,
        budget: Budget { max_evaluations: req.settings.optimize.budget.max(1) as usize, ..Budget::default() },
        once_per_form: micro_recipes(),
        // The stub's invented times are no measure to hold a roofline bound against.
        prior_pruning: !stub,
        ..SearchConfig::default()
    };
    let limits = Limits { limit, search_end, token: &token };
    let (mut proposer, notes, llm_log) = proposers(req, &search_token);
    let proposer = proposer.as_mut();
    if let EvaluatorChoice::Stub(timing) = evaluator {
        let mut notes = notes;
        // No GPU to profile on; a recorded profile still orders the recipes.
        let profile_notes = match req.profile_import.is_some().then(|| profile_original(req, &ctx, &search_token)) {
            Some(Ok(found)) => found,
            Some(Err(why)) => {
                notes.push(format!("the recorded profile was not read: {why}"));
                Vec::new()
            }
            None => Vec::new(),
        };
        let mut ev = StubEvaluator::new(ctx, timing.speedup);
        ev.launch_speedup = timing.launch_speedup;
        ev.parallelism = req.settings.optimize.devices.len();
        ev.profile_notes = profile_notes;
        ev.gpu_time = timing.gpu_time;
        let result = search(&req.text, config, cancel, &mut progress, proposer, &mut ev, &limits)?;
        let best = result.best.map(|id| &result.tree.nodes()[id.0]);
        let mut out = outcome_for(req, &ev.ctx.original, &result, best, Vec::new(), None);
        out.stub = true;
        out.pipeline = PipelineStats { propose_s: result.propose_s, ..ev.pipeline_stats() };
        let new_launch = best.is_some_and(|n| !launch_changes(&req.text, &n.source, &req.kernel).is_empty());
        out.title = format!(
            "Apply optimized {}: {:.2}x faster{} (stub evaluator, not measured)",
            req.kernel,
            out.speedup,
            if new_launch { " with a new launch" } else { "" }
        );
        if best.is_none() {
            out.title = format!("No faster version of {} found (stub evaluator)", req.kernel);
        }
        out.notes.splice(0..0, notes);
        out.notes.extend(deadline_note(&result, limit));
        out.notes.extend(llm_note(&llm_log));
        return Ok(out);
    }
    let spec_seed = {
        let a = req.settings.clone();
        kernelpro_core::analysis::FileAnalysis::without_tools(&req.path, &req.text, &a)
            .launch_specs
            .get(&req.kernel)
            .map(|s| s.seed)
            .unwrap_or(0)
    };
    let run = RunOptions {
        exe: req.exe.clone(),
        runs: 20,
        warmup: 3,
        energy: req.settings.optimize.energy,
        device: 0,
        cancel: search_token.clone(),
    };
    let mut ev =
        GpuEvaluator::new(ctx, run, spec_seed).with_devices(&req.settings.optimize.devices).with_deadline(search_end);
    let devices = ev.devices().to_vec();
    let mut notes = notes;
    // The profile gets a third of the time at most; the search goes on without it.
    let profile_token = search_token.child_token();
    let profile_end = (started + limit / 3).min(search_end);
    let profile_timer = CancelAt::spawn(&handle, profile_token.clone(), profile_end);
    match profile_original(req, &ev.ctx, &profile_token) {
        Ok(found) => ev.profile_notes = found,
        Err(_) if profile_token.is_cancelled() && !token.is_cancelled() => notes.push(format!(
            "the original was not profiled: its profile did not finish within a third of the time limit ({} s), so recipes follow the static findings only",
            (limit / 3).as_secs()
        )),
        Err(why) => {
            notes.push(format!("the original was not profiled, so recipes follow the static findings only: {why}"))
        }
    }
    drop(profile_timer);
    let result = search(&req.text, config, cancel, &mut progress, proposer, &mut ev, &limits)?;
    // Re-verify the best candidates, fastest first, on two more seeds, one never
    // seen, in the time kept for it: a phase of their own until the deadline.
    let verify_token = token.child_token();
    let _verify_timer = CancelAt::spawn(&handle, verify_token.clone(), deadline);
    ev.set_cancel(verify_token.clone());
    ev.set_deadline(deadline);
    let seeds = [spec_seed, spec_seed.wrapping_add(1), spec_seed ^ 0x9E37_79B9_7F4A_7C15];
    // Only a speedup beyond the measured noise (and at least 2%) is worth an edit.
    let beyond_noise = |n: &kernelpro_search::Node| match (&n.outcome, n.speedup) {
        (Outcome::Ok { time_s, noise, .. }, Some(s)) => s > 1.02 && s > 1.0 + noise / time_s,
        _ => false,
    };
    let mut ranked: Vec<&kernelpro_search::Node> =
        result.tree.nodes().iter().filter(|n| n.id != kernelpro_search::NodeId::ROOT && beyond_noise(n)).collect();
    ranked.sort_by(|a, b| b.speedup.partial_cmp(&a.speedup).unwrap_or(std::cmp::Ordering::Equal));
    if let Some(best) = result.best
        && let Some(pos) = ranked.iter().position(|n| n.id == best)
    {
        let b = ranked.remove(pos);
        ranked.insert(0, b);
    }
    let had_candidates_beyond_noise = !ranked.is_empty();
    let mut out_of_time = false;
    // Those that failed the held-out check (not cut short by the deadline): never offered.
    let mut rejected = Vec::new();
    // Candidates that keep the original's launch, or were found correct under it too.
    let mut fine_under_old_launch = Vec::new();
    // Of those, the ones the driver refused to launch under it, with its words.
    let mut refused_under_old_launch: Vec<(kernelpro_search::NodeId, String)> = Vec::new();
    // Three candidates checked on the held-out seeds at most; one found wrong under the original
    // launch (a single job, which the search no longer spends per candidate) does not count.
    let mut held_out_checked = 0;
    // A form (its structural steps: each recipe with the kernel body its point names, launch
    // variants of one body alike) found wrong once is not checked again at its other launches or
    // under micro rewrites on top: they share the failing code, and would take every slot from the
    // next form (a 72x CuTe GEMM wrong under the original launch at twenty points hid a correct 38x
    // tiled contraction). Another body of the same recipe is another form. A failure under the
    // original launch condemns only the form's points that change the launch, and one with micro
    // rewrites only the candidates with those rewrites too: `__launch_bounds__(256)` cannot launch
    // under the user's 1024 threads, which says nothing of the form without it (on the H100 corpus
    // that skip hid a 54x histogram and three tiled transposes).
    let micro = micro_recipes();
    let form_of = |n: &kernelpro_search::Node| -> Form {
        let path = result.tree.path(n.id);
        let steps = path.iter().map(|&id| {
            let node = &result.tree[id];
            (node.recipe.as_str(), node.point.as_ref().and_then(|p| p.get("body")))
        });
        form_key(steps, &micro)
    };
    let mut failed_forms: Vec<FailedForm> = Vec::new();
    // The candidate to offer, and one held back that the driver refuses under the original launch:
    // one that runs there too is preferred while it is within `OLD_LAUNCH_PREFERENCE` of its speed
    // (a `__launch_bounds__` on top gains little and costs host code that launch).
    type Held<'n> = (&'n kernelpro_search::Node, Arc<kernelpro_measure::harness::Prepared>, Option<f64>);
    let mut chosen: Option<Held> = None;
    let mut held_back: Option<Held> = None;
    for node in ranked.iter().take(40) {
        if held_out_checked >= 3 {
            break;
        }
        if let Some((back, ..)) = &held_back
            && node.speedup.unwrap_or(0.0) * OLD_LAUNCH_PREFERENCE < back.speedup.unwrap_or(0.0)
        {
            break;
        }
        let form = form_of(node);
        let changes_launch = !launch_changes(&req.text, &node.source, &req.kernel).is_empty();
        if form_failed(&failed_forms, &form, changes_launch) {
            rejected.push(node.id);
            continue;
        }
        let _span = tracing::debug_span!("optimize.held_out", recipe = %node.recipe).entered();
        let Ok(prepared) = ev.admit(&node.source) else {
            if verify_token.is_cancelled() {
                out_of_time = true;
                break;
            }
            rejected.push(node.id);
            continue;
        };
        // First under the original launch (on the search's seed), when it changes it: the search
        // timed its candidates under their own launch only.
        let mut under_old_launch_only = false;
        let mut passed = match ev.verify_old_launch(&prepared, spec_seed) {
            None | Some(Outcome::Ok { .. }) => {
                fine_under_old_launch.push(node.id);
                true
            }
            // A kernel that cannot launch under the old launch at all (its registers or
            // __launch_bounds__ do not fit the old block) fails loudly in host code left as it was,
            // never with a wrong result: a 128x128-tile GEMM needs its 256 threads.
            Some(Outcome::Crash(why)) if launch_refused(&why) => {
                fine_under_old_launch.push(node.id);
                refused_under_old_launch.push((node.id, why));
                true
            }
            Some(failed) => {
                tracing::debug!(why = failed.failure(), "failed under the original launch");
                under_old_launch_only = true;
                false
            }
        };
        // Then on the held-out seeds, the first job also measuring the energy offered with it.
        held_out_checked += usize::from(passed);
        let mut energy_j = None;
        for (i, &s) in seeds[1..].iter().enumerate() {
            if !passed {
                break;
            }
            match ev.verify(&prepared, s, i == 0) {
                Outcome::Ok { energy_j: e, .. } if i == 0 => energy_j = e,
                Outcome::Ok { .. } => {}
                _ => passed = false,
            }
        }
        if passed {
            // The search's best comes first; a later one is offered only if it failed the held-out check.
            if !refused_under_old_launch.iter().any(|(id, _)| *id == node.id) {
                chosen = Some((*node, prepared, energy_j));
                break;
            }
            if held_back.is_none() {
                held_back = Some((*node, prepared, energy_j));
            }
            continue;
        }
        if verify_token.is_cancelled() {
            out_of_time = true;
            break;
        }
        rejected.push(node.id);
        failed_forms.push(FailedForm { form, under_old_launch_only });
    }
    // What the driver said of a candidate under the original launch, where it refused it.
    let refusal = |node: &kernelpro_search::Node| {
        refused_under_old_launch.iter().find(|(id, _)| *id == node.id).map(|(_, why)| why.as_str())
    };
    if let Some((node, prepared, energy_j)) = chosen.or(held_back) {
        let mut out = outcome_for(req, &ev.ctx.original, &result, Some(node), seeds.to_vec(), refusal(node));
        out.best_energy_j = energy_j;
        out.notes.splice(0..0, notes);
        out.notes.extend(llm_note(&llm_log));
        out.notes.extend(ev.tolerance_note(&prepared));
        out.notes.extend(deadline_note(&result, limit));
        out.devices = devices;
        out.pipeline = PipelineStats { propose_s: result.propose_s, ..ev.pipeline_stats() };
        return Ok(out);
    }
    if out_of_time
        && !token.is_cancelled()
        && let Some(&node) = ranked.iter().find(|n| {
            // One that changes the launch only once it was found correct under the original's.
            !rejected.contains(&n.id)
                && (fine_under_old_launch.contains(&n.id)
                    || launch_changes(&req.text, &n.source, &req.kernel).is_empty())
        })
    {
        // The held-out checks did not fit: the best verified on the search's seed, said so.
        let mut out = outcome_for(req, &ev.ctx.original, &result, Some(node), vec![spec_seed], refusal(node));
        out.notes.splice(0..0, notes);
        out.notes.push(format!(
            "verified on the search's input seed only: the time limit ({} s) ended the check on the held-out seeds; run the search again with a longer --time (optimize.timeSecs) to have it checked there too",
            limit.as_secs()
        ));
        out.notes.extend(llm_note(&llm_log));
        out.notes.extend(deadline_note(&result, limit));
        out.devices = devices;
        out.pipeline = PipelineStats { propose_s: result.propose_s, ..ev.pipeline_stats() };
        return Ok(out);
    }
    let mut out = outcome_for(req, &ev.ctx.original, &result, None, Vec::new(), None);
    out.notes.splice(0..0, notes);
    out.notes.extend(llm_note(&llm_log));
    if out_of_time && rejected.is_empty() && had_candidates_beyond_noise {
        // None failed a check: the time ran out before one could be checked (not "failed").
        out.notes.push(format!(
            "the time limit ({} s) ended the search before its fastest candidates could be checked on the held-out input seeds (and, changing the launch, under the original launch), so none is offered; run the search again with a longer --time (optimize.timeSecs)",
            limit.as_secs()
        ));
    } else {
        out.notes.extend(why_nothing_offered(&result.tree, had_candidates_beyond_noise));
    }
    out.notes.extend(ev.disagreement_note());
    out.notes.extend(deadline_note(&result, limit));
    out.devices = devices;
    out.pipeline = PipelineStats { propose_s: result.propose_s, ..ev.pipeline_stats() };
    out.title = format!("No verified faster version of {} found", req.kernel);
    Ok(out)
}

/// A candidate's form, for the held-out checks: its structural steps (each recipe with the kernel
/// body its point names; another point of the step before replaces that step) and, apart, the micro
/// rewrites on top, sorted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Form {
    steps: Vec<String>,
    micros: Vec<String>,
}

/// A form found wrong in the held-out checks, and whether only under the original launch.
#[derive(Debug)]
struct FailedForm {
    form: Form,
    under_old_launch_only: bool,
}

/// The form of a candidate from the steps of its path (recipe, and the kernel body its parameter
/// point names), the root left out.
fn form_key<'a>(steps: impl IntoIterator<Item = (&'a str, Option<u64>)>, micro: &[String]) -> Form {
    let mut form = Form::default();
    for (recipe, body) in steps {
        if recipe == "original" {
            continue;
        }
        if micro.iter().any(|m| m == recipe) {
            form.micros.push(recipe.to_string());
            continue;
        }
        let step = match body {
            Some(body) => format!("{recipe}#{body}"),
            None => recipe.to_string(),
        };
        match form.steps.last_mut() {
            Some(last) if last.split('#').next() == Some(recipe) => *last = step,
            _ => form.steps.push(step),
        }
    }
    form.micros.sort();
    form.micros.dedup();
    form
}

/// Whether a candidate of `form` shares a failure already seen: the same structural steps, the
/// failing one's micro rewrites all among its own, and, where that one failed only under the
/// original launch, a launch of its own too.
fn form_failed(failed: &[FailedForm], form: &Form, changes_launch: bool) -> bool {
    !form.steps.is_empty()
        && failed.iter().any(|f| {
            f.form.steps == form.steps
                && f.form.micros.iter().all(|m| form.micros.contains(m))
                && (changes_launch || !f.under_old_launch_only)
        })
}

/// The micro rewrites, tried once per form, at its best point: the micro tier, and the float
/// literals and the L2 prefetch hint, which change no structure either (a form's every point would
/// otherwise try them again).
pub fn micro_recipes() -> Vec<String> {
    const ONCE_TOO: [&str; 2] = ["FloatLiterals", "PrefetchL2"];
    kernelpro_recipes::all()
        .iter()
        .filter(|r| r.tier() == kernelpro_recipes::Tier::Micro || ONCE_TOO.contains(&r.name()))
        .map(|r| r.name().to_string())
        .collect()
}

/// How far a search the time limit ended got: evaluations, how many verified,
/// and what it cut short.
fn deadline_note(result: &kernelpro_search::SearchResult, limit: Duration) -> Option<String> {
    if result.stop != kernelpro_search::StopReason::WallTime {
        return None;
    }
    let verified = result.stats.verified.saturating_sub(1);
    let mut note = format!(
        "the time limit ({} s) ended the search after {} evaluations ({verified} verified)",
        limit.as_secs(),
        result.evaluations
    );
    if !result.unfinished.is_empty() {
        note.push_str(&format!("; cut short in flight: {}", result.unfinished.join(", ")));
    }
    Some(note)
}

/// Fires `token` at `at` (at once if it has passed); the timer ends when dropped.
struct CancelAt(tokio::task::JoinHandle<()>);

impl CancelAt {
    fn spawn(handle: &Handle, token: CancellationToken, at: Instant) -> CancelAt {
        CancelAt(handle.spawn(async move {
            tokio::time::sleep_until(at.into()).await;
            tracing::debug!("time is up: the work in flight is cancelled");
            token.cancel();
        }))
    }
}

impl Drop for CancelAt {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The search's deadline and the caller's token, for telling a time-out from a cancel.
struct Limits<'t> {
    limit: Duration,
    search_end: Instant,
    token: &'t CancellationToken,
}

/// For each tried entry whose rewrite was tried more than once, which
/// variant it is: the spec lines it changed (`block = 128`, a reordered
/// `tune`) or its number among them, and the rewrites below it.
fn tried_variants(original: &str, kernel: &str, result: &kernelpro_search::SearchResult) -> Vec<String> {
    let entries = result.memory.entries();
    let spec_of = |text: &str| -> Vec<String> {
        kernelpro_spec::parse_file(text)
            .kernel(kernel)
            .map(|k| k.lines.iter().map(|l| l.text.trim().to_owned()).collect())
            .unwrap_or_default()
    };
    let before = spec_of(original);
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut out = vec![String::new(); entries.len()];
    for (i, e) in entries.iter().enumerate() {
        let count = entries.iter().filter(|o| o.recipe == e.recipe).count();
        if count < 2 {
            continue;
        }
        let n = seen.entry(e.recipe.as_str()).or_default();
        *n += 1;
        let changed: Vec<String> = result
            .tree
            .nodes()
            .get(e.node.0)
            .map(|node| spec_of(&node.source).into_iter().filter(|l| !before.contains(l)).collect())
            .unwrap_or_default();
        let mut variant = if changed.is_empty() { format!("variant {n} of {count}") } else { changed.join("; ") };
        // The rewrites it was applied on top of, when not the original (a node that another point
        // of its form replaces is none of them).
        let path = result.tree.path(e.node);
        let below: Vec<&str> = path
            .iter()
            .enumerate()
            .skip(1)
            .take(path.len().saturating_sub(2))
            .filter(|(j, _)| path.get(j + 1).is_none_or(|next| !result.tree[*next].alternative))
            .filter_map(|(_, id)| result.tree.nodes().get(id.0).map(|n| n.recipe.as_str()))
            .collect();
        if !below.is_empty() {
            variant.push_str(&format!("; on top of {}", below.join(" + ")));
        }
        out[i] = variant;
    }
    out
}

/// Why the search stopped, in words (`evaluation budget (30) spent`), never the enum's name.
fn stop_words(stop: kernelpro_search::StopReason, req: &OptimizeRequest) -> String {
    use kernelpro_search::StopReason;
    match stop {
        StopReason::Evaluations => format!("evaluation budget ({}) spent", req.settings.optimize.budget.max(1)),
        StopReason::Iterations => "iteration limit reached".into(),
        StopReason::WallTime => format!("time limit ({} s) reached", req.settings.optimize.time_secs.max(1)),
        StopReason::Cancelled => "cancelled".into(),
        StopReason::Exhausted => "no rewrite left to try".into(),
    }
}

/// Why a search that timed faster candidates offers none: the user sees a
/// speedup in the tried list and deserves the reason it was not kept.
fn why_nothing_offered(tree: &kernelpro_search::Tree, had_candidates_beyond_noise: bool) -> Option<String> {
    if had_candidates_beyond_noise {
        return Some("the fastest candidates failed the check on the held-out input seeds (or, changing the launch, under the original launch), so none is offered".into());
    }
    let (speedup, noise, recipe) = tree
        .nodes()
        .iter()
        .filter(|n| n.id != kernelpro_search::NodeId::ROOT)
        .filter_map(|n| match (&n.outcome, n.speedup) {
            (Outcome::Ok { time_s, noise, .. }, Some(s)) if s > 1.0 => Some((s, noise / time_s, &n.recipe)),
            _ => None,
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some(format!(
        "the fastest candidate ({recipe}, {speedup:.2}x) is within the run-to-run noise of its timing (±{:.1}%) or the 2% floor, so none is offered; other work on the GPU makes timings noisy",
        noise * 100.0
    ))
}

/// Sets the search's cancel flag (plain Rust, checked before each
/// evaluation) when the caller's token fires; the compiles, harness runs and
/// ncu passes watch the token itself.
struct FlagOnCancel(tokio::task::JoinHandle<()>);

impl FlagOnCancel {
    fn spawn(handle: &Handle, token: CancellationToken, flag: Arc<AtomicBool>) -> FlagOnCancel {
        FlagOnCancel(handle.spawn(async move {
            token.cancelled().await;
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }))
    }
}

impl Drop for FlagOnCancel {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The original's two-stage profile, as notes for the proposers: recipes that
/// answer what ncu measured (uncoalesced loads, stalls, a tail) go first.
fn profile_original(
    req: &OptimizeRequest,
    ctx: &Context,
    cancel: &CancellationToken,
) -> Result<Vec<FindingNote>, String> {
    if !req.settings.optimize.profile_original {
        return Err("optimize.profileOriginal is off".into());
    }
    if let Some(dir) = &req.profile_import {
        let report = Exports::from_dir(dir).and_then(|e| analyze_exports(&e, &req.text, &Thresholds::default()))?;
        return Ok(notes_of(&report));
    }
    let file = FileProfileRequest {
        path: req.path.clone(),
        text: req.text.clone(),
        kernel: Some(req.kernel.clone()),
        full: false,
        exe: req.exe.clone(),
        save_exports: None,
        ready: None,
        last: None,
    };
    let _span = tracing::debug_span!("optimize.profile").entered();
    let report = ctx.handle.block_on(profile_file(&file, &req.settings, &ctx.analyzer, cancel))?;
    Ok(notes_of(&report))
}

fn notes_of(report: &ProfileReport) -> Vec<FindingNote> {
    report
        .findings()
        .filter_map(|f| {
            Some(FindingNote::new(f.code.clone()?, f.guidance.clone().unwrap_or_else(|| f.message.clone())))
        })
        .collect()
}

/// The built-in recipes (only those named in `req.recipes`, for a finding's
/// quick fix), and the LLM too when the user enabled it, with the log of the
/// LLM's failures (shown in the result's notes).
fn proposers(
    req: &OptimizeRequest,
    cancel: &CancellationToken,
) -> (Box<dyn Proposer>, Vec<String>, Option<kernelpro_llm::FailureLog>) {
    let recipes = kernelpro_recipes::RecipeProposer::new(&req.kernel)
        .with(Box::new(kernelpro_cute::CuteGemmRecipe))
        .for_arch(&req.settings.arch);
    if let Some(only) = &req.recipes {
        return (Box::new(recipes.only(only)), Vec::new(), None);
    }
    let recipes = Box::new(recipes);
    if !req.settings.llm.enabled {
        return (recipes, Vec::new(), None);
    }
    // A cancelled search ends the request in flight, not only the next one.
    match llm_proposer(req).map(|llm| llm.with_cancel(cancel.clone())) {
        Ok(llm) => {
            let log = llm.failure_log();
            (Box::new(kernelpro_search::RoundRobin::new(vec![recipes, Box::new(llm)])), Vec::new(), Some(log))
        }
        Err(why) => (recipes, vec![format!("the LLM proposer is not used: {why}")], None),
    }
}

/// Where the LLM's candidates may include from: the kernel's own file, and
/// headers the compile finds in the CUDA toolkit's or CUTLASS's include
/// directories (searched after the kernel's folder and the project's `-I`
/// directories, which shadow them).
fn include_policy(req: &OptimizeRequest) -> kernelpro_llm::IncludePolicy {
    let path = std::path::absolute(&req.path).unwrap_or_else(|_| req.path.clone());
    let home = path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    let mut search_dirs = vec![home.clone()];
    let flags = Analyzer::flags_for(&path, &req.settings);
    let mut it = flags.iter();
    while let Some(flag) = it.next() {
        const DIR_FLAGS: [&str; 6] = ["-I", "-isystem", "-iquote", "-idirafter", "--include-path", "--system-include"];
        let dir = if DIR_FLAGS.contains(&flag.as_str()) {
            it.next().cloned()
        } else {
            DIR_FLAGS.iter().find_map(|f| flag.strip_prefix(f)).map(|d| d.trim_start_matches('=').to_owned())
        };
        if let Some(dir) = dir.filter(|d| !d.is_empty()) {
            search_dirs.push(home.join(dir));
        }
    }
    let mut allowed_roots = Vec::new();
    if let Some(toolkit) = Analyzer::find_nvcc(&req.settings).and_then(|n| n.path.parent()?.parent().map(PathBuf::from))
    {
        allowed_roots.push(toolkit.join("include"));
        if let Ok(targets) = std::fs::read_dir(toolkit.join("targets")) {
            allowed_roots.extend(targets.flatten().map(|t| t.path().join("include")));
        }
    }
    let roots = kernelpro_toolchain::toolchain::Env::for_settings(&req.settings).roots;
    if let Some(cutlass) = kernelpro_cutlass::find_root(None, &roots) {
        allowed_roots.extend([cutlass.join("include"), cutlass.join("tools/util/include")]);
    }
    // A root holding the kernel's folder would open the whole project.
    allowed_roots.retain(|r| !home.starts_with(r));
    kernelpro_llm::IncludePolicy { own_file: Some(path), search_dirs, allowed_roots }
}

/// The LLM's failures, as one note for the user.
fn llm_note(log: &Option<kernelpro_llm::FailureLog>) -> Option<String> {
    log.as_ref().and_then(kernelpro_llm::FailureLog::summary)
}

fn llm_proposer(req: &OptimizeRequest) -> Result<kernelpro_llm::LlmProposer, String> {
    use kernelpro_llm::{LlmConfig, Provider};
    let llm = &req.settings.llm;
    let (provider, default_endpoint) = match llm.provider.as_str() {
        "anthropic" => (Provider::Anthropic, "https://api.anthropic.com"),
        _ => (Provider::OpenAi, "https://api.openai.com"),
    };
    let model = llm.model.clone().ok_or("set llm.model (e.g. the model your endpoint serves)")?;
    let mut config = LlmConfig::new(provider, llm.endpoint.clone().unwrap_or_else(|| default_endpoint.into()), model);
    config.enabled = true;
    config.api_key = req.llm_key.clone().or_else(kernelpro_llm::ApiKey::from_env);
    let cutlass =
        kernelpro_cutlass::find_root(None, &kernelpro_toolchain::toolchain::Env::for_settings(&req.settings).roots)
            .and_then(|root| kernelpro_cutlass::Index::build(&root).ok())
            .map(Arc::new);
    Ok(kernelpro_llm::LlmProposer::new(config, &req.kernel, cutlass)
        .map_err(|e| e.to_string())?
        .with_includes(include_policy(req)))
}

fn search(
    original: &str,
    config: SearchConfig,
    cancel: Arc<AtomicBool>,
    progress: &mut impl FnMut(&Progress),
    proposer: &mut dyn Proposer,
    evaluator: &mut dyn Evaluator,
    limits: &Limits,
) -> Result<kernelpro_search::SearchResult, OptimizeError> {
    let _span = tracing::debug_span!("optimize.search").entered();
    let started = Instant::now();
    let result = Search::new(config)
        .cancel_flag(cancel)
        .deadline(limits.search_end)
        .on_progress(|p| progress(p))
        .run(original, proposer, evaluator);
    tracing::debug!(ms = started.elapsed().as_millis() as u64, ok = result.is_ok(), "search ended");
    result.map_err(|e| {
        if limits.token.is_cancelled() {
            OptimizeError::Cancelled
        } else if Instant::now() >= limits.search_end {
            OptimizeError::TimeUp { limit_s: limits.limit.as_secs(), stage: "measuring the original" }
        } else {
            baseline_failure(&e)
        }
    })
}

/// Why the search could not start, in words (never the enum's debug form).
fn baseline_failure(e: &kernelpro_search::SearchError) -> OptimizeError {
    let kernelpro_search::SearchError::Baseline(outcome) = e;
    match outcome {
        Outcome::CompileError(why) => OptimizeError::OriginalCompile(why.clone()),
        Outcome::WrongOutput(why) => OptimizeError::OriginalOutput(why.clone()),
        Outcome::Timeout => OptimizeError::OriginalTimeout,
        Outcome::Crash(why) => OptimizeError::OriginalCrash(why.clone()),
        Outcome::Ok { .. } => OptimizeError::OriginalUnmeasured,
    }
}

fn outcome_for(
    req: &OptimizeRequest,
    original: &str,
    result: &kernelpro_search::SearchResult,
    best: Option<&kernelpro_search::Node>,
    seeds: Vec<u64>,
    old_launch_refused: Option<&str>,
) -> OptimizeOutcome {
    let src = kernelpro_source::parse(original);
    let region = kernel_region(original, &src, &req.kernel);
    let edit = best.zip(region).and_then(|(n, r)| edit_within_region(original, &n.source, r).ok().flatten());
    let speedup = best.and_then(|n| n.speedup).unwrap_or(1.0);
    let steps: Vec<StepReport> = best
        .map(|n| {
            let path = result.tree.path(n.id);
            path.iter()
                .enumerate()
                .skip(1)
                // Another point of a form replaces its parent's step: it is no rewrite of that text.
                .filter(|(i, _)| path.get(i + 1).is_none_or(|next| !result.tree[*next].alternative))
                .map(|(_, &id)| {
                    let node = &result.tree[id];
                    StepReport {
                        recipe: node.recipe.clone(),
                        answers: node.answers.clone(),
                        speedup: node.speedup,
                        point: node.point.clone(),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let (best_ms, best_energy_j) = match best.map(|n| &n.outcome) {
        Some(Outcome::Ok { time_s, energy_j, .. }) => (Some(time_s * 1e3), *energy_j),
        _ => (None, None),
    };
    let launch = best.map(|n| launch_changes(original, &n.source, &req.kernel)).unwrap_or_default();
    let with_launch = if launch.is_empty() { "" } else { " with a new launch" };
    let sites = match (best, region, &edit) {
        (Some(n), Some(r), Some(_)) => {
            let resolved = kernelpro_core::analysis::FileAnalysis::without_tools(&req.path, &n.source, &req.settings)
                .launch_specs
                .get(&req.kernel)
                .map(|l| {
                    let dims = |d: [u32; 3]| format!("dim3({}, {}, {})", d[0], d[1], d[2]);
                    format!("<<<{}, {}, {}>>>", dims(l.grid), dims(l.block), l.smem)
                });
            update_sites(original, &n.source, &req.kernel, r, resolved.as_deref())
        }
        _ => SiteUpdate::default(),
    };
    // A finding promises rewrites: where none of them applied, say which fact blocked each.
    let codes: Vec<kernelpro_model::Code> = match &result.tree.nodes()[kernelpro_search::NodeId::ROOT.0].outcome {
        Outcome::Ok { findings, .. } => findings.iter().filter_map(|f| kernelpro_model::Code::parse(&f.tool)).collect(),
        _ => Vec::new(),
    };
    // A finding some step of the best path answers (a rewrite of another tier) needs no excuse.
    let answered: Vec<&str> = steps.iter().filter_map(|s| s.answers.as_deref()).collect();
    let codes: Vec<kernelpro_model::Code> = codes.into_iter().filter(|c| !answered.contains(&c.as_str())).collect();
    let not_applied = kernelpro_recipes::why_not(original, &req.kernel, &codes);
    let lead = if edit.is_none() { "no faster version: " } else { "" };
    let mut notes: Vec<String> =
        kernelpro_recipes::explain(&not_applied).into_iter().map(|line| format!("{lead}{line}")).collect();
    if !launch.is_empty() {
        notes.push(launch_note(original, &req.kernel, &launch, !sites.edits.is_empty(), old_launch_refused));
    }
    notes.extend(sites.notes);
    let new_text = edit.as_ref().map(|e| apply_edits(original, std::iter::once(e).chain(&sites.edits)));
    OptimizeOutcome {
        kernel: req.kernel.clone(),
        speedup,
        original_ms: result.baseline_time_s * 1e3,
        best_ms,
        original_energy_j: result.baseline_energy_j,
        best_energy_j,
        title: format!(
            "Apply optimized {}: {:.2}x faster{with_launch}, verified on {} seed{}",
            req.kernel,
            speedup,
            seeds.len(),
            if seeds.len() == 1 { "" } else { "s" }
        ),
        verified_seeds: seeds,
        steps,
        tried: result.memory.entries().to_vec(),
        tried_variants: tried_variants(original, &req.kernel, result),
        evaluations: result.evaluations,
        pruned_by_prior: result.stats.pruned_by_prior,
        stop: stop_words(result.stop, req),
        new_text,
        edit,
        launch_site_edits: sites.edits,
        stub: false,
        pipeline: PipelineStats::default(),
        notes,
        devices: Vec::new(),
        not_applied,
    }
}

/// `original` with non-overlapping line edits (in its own line numbers) applied.
fn apply_edits<'e>(original: &str, edits: impl Iterator<Item = &'e LineEdit>) -> String {
    let mut edits: Vec<&LineEdit> = edits.collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.start_line));
    let mut lines: Vec<String> = original.split_inclusive('\n').map(str::to_string).collect();
    for e in edits {
        lines.splice(e.start_line as usize..e.end_line as usize, [e.text.clone()]);
    }
    lines.concat()
}

/// How much faster a candidate the driver refuses under the original launch must be than one that
/// runs there too for it to be offered instead.
const OLD_LAUNCH_PREFERENCE: f64 = 1.05;

/// Whether a failure under the original launch is the driver refusing the launch itself (too many
/// registers or threads for the kernel's limits): loud in host code, no wrong output possible.
fn launch_refused(why: &str) -> bool {
    why.contains("launching `")
        && [
            "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
            "CUDA_ERROR_INVALID_VALUE",
            // A cluster kernel (ClusterUnits) under a grid that is not a multiple of its cluster.
            "CUDA_ERROR_INVALID_CLUSTER_SIZE",
            "CUDA_ERROR_CLUSTER_OUT_OF_RESOURCES",
        ]
        .iter()
        .any(|e| why.contains(e))
}

/// The launch note's last words: what the kernel did under the old launch (the same output, or
/// `refused`: the driver's refusal, `…failed with CUDA_ERROR_…`, which is said instead).
fn under_old_launch(refused: Option<&str>) -> String {
    let Some(why) = refused else {
        return "The new kernel was also run under the old launch and gave the same output there (its speed there is not part of the measurement).".into();
    };
    let error = why.split("failed with ").nth(1).and_then(|e| e.split_whitespace().next()).unwrap_or("a launch error");
    format!(
        "Under the old launch the new kernel does not launch at all ({error}): host code left as it was gets that error, never a wrong result."
    )
}

/// What the user must do for a launch-changing edit: the spec's new launch
/// is what KernelPro runs; host code must launch the kernel so itself (the
/// edit does it for this file's launches it could write: `sites_updated`); `refused`: the driver's
/// words where it refused the new kernel under the old launch.
fn launch_note(original: &str, kernel: &str, changes: &[String], sites_updated: bool, refused: Option<&str>) -> String {
    let old = under_old_launch(refused);
    // Only a larger dynamic shared memory needs the attribute raised.
    let smem = if changes.iter().any(|c| c.contains("`smem")) {
        ", and raise cudaFuncAttributeMaxDynamicSharedMemorySize to the new `smem` first"
    } else {
        ""
    };
    if sites_updated {
        return format!(
            "The edit changes the launch of `{kernel}` in its spec: {}, and this file's launch of it to match. The speedup is for that launch: host code in other files that launches `{kernel}` must use it too{smem}. {old}",
            changes.join(", ")
        );
    }
    let host: Vec<String> = original
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(&format!("{kernel}<<<")))
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    let at = match host.as_slice() {
        [] => String::new(),
        lines => format!(" (this file launches it on line {})", lines.join(", ")),
    };
    format!(
        "The edit changes the launch of `{kernel}` in its spec: {}. The speedup is for that launch: host code that launches `{kernel}`{at} must use it{smem}. {old}",
        changes.join(", ")
    )
}

#[cfg(test)]
mod tests {
    /// The forms the held-out checks skip together: launch variants of one body are one form, another
    /// body of the recipe another, micro rewrites on top change nothing.
    #[test]
    fn a_form_is_its_structural_steps_with_their_bodies() {
        let micro: Vec<String> = ["RestrictConst", "LaunchBounds"].map(String::from).to_vec();
        type Steps = &'static [(&'static str, Option<u64>)];
        let cases: &[(Steps, &[&str])] = &[
            (&[("original", None)], &[]),
            (&[("original", None), ("CuteGemm", Some(0))], &["CuteGemm#0"]),
            (&[("original", None), ("CuteGemm", Some(0)), ("CuteGemm", Some(0))], &["CuteGemm#0"]),
            (
                &[("original", None), ("CuteGemm", Some(0)), ("RestrictConst", None), ("LaunchBounds", None)],
                &["CuteGemm#0"],
            ),
            (
                &[("original", None), ("TiledContraction", Some(0)), ("TiledContraction", Some(3))],
                &["TiledContraction#3"],
            ),
            (
                &[("original", None), ("HoistRowWork", Some(1)), ("WarpUnits", Some(0))],
                &["HoistRowWork#1", "WarpUnits#0"],
            ),
            (
                &[("original", None), ("GridStrideMap", None), ("TuneParameter", None)],
                &["GridStrideMap", "TuneParameter"],
            ),
        ];
        for (steps, want) in cases {
            assert_eq!(super::form_key(steps.iter().copied(), &micro).steps, *want, "{steps:?}");
        }
        let form = super::form_key([("CuteGemm", Some(0)), ("LaunchBounds", None), ("RestrictConst", None)], &micro);
        assert_eq!(form.micros, ["LaunchBounds", "RestrictConst"]);
    }

    /// Which candidates a failure in the held-out checks skips: a form wrong on a held-out seed takes
    /// its every point and micro rewrite along; one wrong only under the original launch, only its
    /// points that change the launch; one with micro rewrites, only candidates with those rewrites.
    #[test]
    fn a_failure_skips_the_candidates_that_share_it() {
        use super::{FailedForm, Form, form_failed};
        let form = |steps: &[&str], micros: &[&str]| Form {
            steps: steps.iter().map(|s| s.to_string()).collect(),
            micros: micros.iter().map(|s| s.to_string()).collect(),
        };
        let failed = |f: Form, under_old_launch_only: bool| FailedForm { form: f, under_old_launch_only };
        let wrong_on_a_seed = [failed(form(&["TiledTranspose#0"], &[]), false)];
        let wrong_under_old = [failed(form(&["TiledTranspose#0"], &[]), true)];
        let bounds_under_old = [failed(form(&["TiledTranspose#0"], &["LaunchBounds"]), true)];
        // (failures, candidate, changes its launch, skipped)
        let cases: &[(&[FailedForm], Form, bool, bool)] = &[
            (&wrong_on_a_seed, form(&["TiledTranspose#0"], &[]), false, true),
            (&wrong_on_a_seed, form(&["TiledTranspose#0"], &["PragmaUnroll"]), true, true),
            (&wrong_on_a_seed, form(&["TiledTranspose#1"], &[]), true, false),
            (&wrong_on_a_seed, form(&["GridStrideMap"], &[]), true, false),
            (&wrong_under_old, form(&["TiledTranspose#0"], &[]), true, true),
            (&wrong_under_old, form(&["TiledTranspose#0"], &[]), false, false),
            (&bounds_under_old, form(&["TiledTranspose#0"], &["LaunchBounds", "RestrictConst"]), true, true),
            (&bounds_under_old, form(&["TiledTranspose#0"], &["RestrictConst"]), true, false),
            (&bounds_under_old, form(&["TiledTranspose#0"], &[]), true, false),
            (&[], form(&["TiledTranspose#0"], &[]), true, false),
            (&wrong_on_a_seed, form(&[], &["RestrictConst"]), true, false),
        ];
        for (failures, candidate, changes, want) in cases {
            assert_eq!(form_failed(failures, candidate, *changes), *want, "{candidate:?} changes launch {changes}");
        }
    }

    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_launch_note_names_the_changes_and_the_host_launches() {
        let original = "__global__ void k(float* y) {}\nint main() {\n  k<<<4, 256>>>(y);\n}\n";
        let note = launch_note(original, "k", &["`block = 256` → `block = 384`".into()], false, None);
        assert!(note.contains("the launch of `k` in its spec: `block = 256` → `block = 384`."), "{note}");
        assert!(note.contains("(this file launches it on line 3) must use it."), "{note}");
        let note = launch_note(original, "k", &["`none` → `smem = 1024`".into()], false, None);
        assert!(note.contains("must use it, and raise cudaFuncAttributeMaxDynamicSharedMemorySize"), "{note}");
    }

    /// A kernel the driver refuses to launch under the old launch is offered, its note saying so;
    /// one that runs there and fails otherwise is not.
    #[test]
    fn a_refused_old_launch_is_said_in_the_launch_note() {
        let refused = "it changes the launch, and under the original launch (which host code that is not updated still uses) it failed: launching `k` failed with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources requested for launch): registers per thread × threads per block exceed the SM";
        assert!(launch_refused(refused));
        assert!(launch_refused(&refused.replace("LAUNCH_OUT_OF_RESOURCES", "INVALID_VALUE")));
        assert!(launch_refused(&refused.replace("LAUNCH_OUT_OF_RESOURCES", "INVALID_CLUSTER_SIZE")));
        assert!(!launch_refused(
            "it failed: launching `k` failed with CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access)"
        ));
        assert!(!launch_refused("it failed: allocating 4 bytes for y failed with CUDA_ERROR_INVALID_VALUE"));
        let original = "__global__ void k(float* y) {}\n";
        let note = launch_note(original, "k", &["`block = (32, 32)` → `block = 256`".into()], false, Some(refused));
        assert!(
            note.ends_with("Under the old launch the new kernel does not launch at all (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES): host code left as it was gets that error, never a wrong result."),
            "{note}"
        );
    }

    #[test]
    fn a_failed_baseline_is_said_in_words() {
        let e = kernelpro_search::SearchError::Baseline(Outcome::CompileError("k.cu:3: error: expected a `;`".into()));
        assert_eq!(
            super::baseline_failure(&e).to_string(),
            "the original kernel could not be compiled for the search: k.cu:3: error: expected a `;`"
        );
    }

    #[test]
    fn the_callers_token_reaches_the_search_flag() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (flag, token) = (Arc::new(AtomicBool::new(false)), CancellationToken::new());
        let watch = FlagOnCancel::spawn(rt.handle(), token.clone(), flag.clone());
        std::thread::sleep(Duration::from_millis(250));
        assert!(!flag.load(Ordering::SeqCst));
        token.cancel();
        let set = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            flag.load(Ordering::SeqCst)
        });
        assert!(set, "the flag was set within 2 s");
        drop(watch);
    }

    /// A recorded profile orders the recipes within each tier. The search
    /// (stub evaluator, no GPU) takes strided_copy's structural rewrite first
    /// with or without it; after the structural tier, the measured
    /// `Uncoalesced` puts LoopInterchange first, where without it the static
    /// findings lead.
    #[test]
    fn a_recorded_profile_orders_the_recipes() {
        use kernelpro_search::{NodeId, ProposeContext, SearchMemory};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let path = root.join("bench/kernels/strided_copy.cu");
        let text = std::fs::read_to_string(&path).unwrap();
        let recorded = root.join("tests/fixtures/h200-kernelpro/strided_copy");
        let first_step = |import: Option<PathBuf>| {
            let rt = tokio::runtime::Runtime::new().unwrap();
            let mut settings = Settings { trusted: true, ..Default::default() };
            (settings.optimize.evaluator, settings.optimize.budget) = ("stub:1.5".into(), 2);
            let req = OptimizeRequest {
                path: path.clone(),
                text: text.clone(),
                kernel: "strided_copy".into(),
                settings,
                strategy: Strategy::Greedy,
                seed: 0,
                exe: "kernelpro".into(),
                llm_key: None,
                profile_import: import,
                recipes: None,
            };
            let out = optimize(&req, rt.handle().clone(), CancellationToken::new(), |_| {}).unwrap();
            // The only notes: why the uncoalesced load's promised structural rewrites did not apply.
            assert!(out.notes.iter().all(|n| n.contains("promises rewrites, and none applied")), "{:?}", out.notes);
            out.steps[0].recipe.clone()
        };
        assert_eq!(first_step(Some(recorded.clone())), "GridStrideMap");
        assert_eq!(first_step(None), "GridStrideMap");

        let report =
            Exports::from_dir(&recorded).and_then(|e| analyze_exports(&e, &text, &Thresholds::default())).unwrap();
        let first_rewrite = |findings: &[FindingNote]| {
            let memory = SearchMemory::default();
            let ctx = ProposeContext {
                parent: NodeId::ROOT,
                source: &text,
                depth: 0,
                speedup: Some(1.0),
                best_speedup: 1.0,
                findings,
                failure: None,
                memory: &memory,
                wanted: 100,
            };
            let structural: Vec<&str> = kernelpro_recipes::all()
                .iter()
                .filter(|r| r.tier() == kernelpro_recipes::Tier::Structural)
                .map(|r| r.name())
                .collect();
            let p = kernelpro_recipes::RecipeProposer::new("strided_copy")
                .propose(&ctx)
                .into_iter()
                .find(|p| !structural.contains(&p.recipe.as_str()))
                .expect("a rewrite past the structural tier");
            (p.recipe, p.answers)
        };
        let measured = first_rewrite(&notes_of(&report));
        assert_eq!(measured, ("LoopInterchange".to_string(), Some("Uncoalesced".to_string())));
        assert_ne!(first_rewrite(&[]), measured);
    }
}
