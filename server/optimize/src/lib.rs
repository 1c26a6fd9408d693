//! "Optimize this kernel": a Monte Carlo tree search over rewrites from the
//! built-in recipes, each candidate compiled, guarded, verified against the
//! original on identical inputs and timed; the best is re-verified on held-out
//! inputs and offered as one edit of the kernel's region.
//!
//! Call [`optimize`] from a blocking thread: evaluators drive async compiles
//! through the given runtime handle.

mod disagreement;
mod evaluator;
mod guard;
mod launch_site;
mod region;

pub use evaluator::{Context, GpuEvaluator, StubEvaluator, cute_settings};
pub use guard::{check_candidate, launch_changes};
pub use launch_site::{SiteUpdate, update_sites};
pub use region::{LineEdit, edit_within_region, kernel_region};

use kernelpro_core::analysis::Analyzer;
use kernelpro_core::harness::RunOptions;
use kernelpro_core::profiling::{Exports, FileProfileRequest, ProfileReport, analyze_exports, profile_file};
use kernelpro_core::settings::Settings;
use kernelpro_profile::Thresholds;
use kernelpro_search::{
    Budget, Evaluator, FindingNote, MemoryEntry, Outcome, Progress, Proposer, Search, SearchConfig, Strategy,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
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
}

/// `PrefetchL2 (answers WarpStall) → 1.23x`: one step of the best path, as the CLI and the hover show it.
impl std::fmt::Display for StepReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.recipe)?;
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
    pub evaluations: usize,
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
}

impl OptimizeOutcome {
    /// Every edit that applying the result makes, in the original's lines:
    /// the kernel's region and the file's launch sites; none without a result.
    pub fn line_edits(&self) -> Vec<LineEdit> {
        let Some(edit) = &self.edit else { return Vec::new() };
        std::iter::once(edit).chain(&self.launch_site_edits).cloned().collect()
    }
}

/// Runs the search on the calling (blocking) thread. `cancel` stops it at its
/// next evaluation with the best so far, and kills the child processes and
/// the LLM request in flight at once.
pub fn optimize(
    req: &OptimizeRequest,
    handle: Handle,
    token: CancellationToken,
    mut progress: impl FnMut(&Progress),
) -> Result<OptimizeOutcome, String> {
    let cancel = Arc::new(AtomicBool::new(false));
    let _watch = FlagOnCancel::spawn(&handle, token.clone(), cancel.clone());
    let ctx = Context {
        path: req.path.clone(),
        original: req.text.clone(),
        original_src: kernelpro_source::parse(&req.text),
        kernel: req.kernel.clone(),
        settings: req.settings.clone(),
        analyzer: Analyzer::default(),
        handle,
        cancel: token,
    };
    let config = SearchConfig {
        strategy: req.strategy,
        seed: req.seed,
        budget: Budget {
            max_evaluations: req.settings.optimize.budget.max(1) as usize,
            wall_time: Some(Duration::from_secs(req.settings.optimize.time_secs.max(1))),
            ..Budget::default()
        },
        ..SearchConfig::default()
    };
    let (mut proposer, notes) = proposers(req, &ctx.cancel);
    let proposer = proposer.as_mut();
    let evaluator_kind = req.settings.optimize.evaluator.clone();
    if let Some(speedups) = evaluator_kind.strip_prefix("stub:") {
        let bad = || {
            format!(
                "optimize.evaluator `{evaluator_kind}`: write stub:SPEEDUP or stub:SPEEDUP:LAUNCH_SPEEDUP, e.g. stub:1.5"
            )
        };
        let (speedup, launch_speedup) = match speedups.split_once(':') {
            Some((s, l)) => (s.parse::<f64>().map_err(|_| bad())?, Some(l.parse::<f64>().map_err(|_| bad())?)),
            None => (speedups.parse::<f64>().map_err(|_| bad())?, None),
        };
        let mut notes = notes;
        // No GPU to profile on; a recorded profile still orders the recipes.
        let profile_notes = match req.profile_import.is_some().then(|| profile_original(req, &ctx)) {
            Some(Ok(found)) => found,
            Some(Err(why)) => {
                notes.push(format!("the recorded profile was not read: {why}"));
                Vec::new()
            }
            None => Vec::new(),
        };
        let mut ev = StubEvaluator {
            ctx,
            speedup,
            launch_speedup,
            parallelism: req.settings.optimize.devices.len(),
            profile_notes,
        };
        let result = search(&req.text, config, cancel, &mut progress, proposer, &mut ev)?;
        let best = result.best.map(|id| &result.tree.nodes()[id.0]);
        let mut out = outcome_for(req, &ev.ctx.original, &result, best, Vec::new());
        out.stub = true;
        let new_launch = best.is_some_and(|n| !launch_changes(&req.text, &n.source, &req.kernel).is_empty());
        out.title = format!(
            "Apply optimized {}: {:.2}x faster{} (stub evaluator, not measured)",
            req.kernel,
            out.speedup,
            if new_launch { " with a new launch" } else { "" }
        );
        out.notes.splice(0..0, notes);
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
        cancel: ctx.cancel.clone(),
    };
    let mut ev = GpuEvaluator::new(ctx, run, spec_seed).with_devices(&req.settings.optimize.devices);
    let devices = ev.devices().to_vec();
    let mut notes = notes;
    match profile_original(req, &ev.ctx) {
        Ok(found) => ev.profile_notes = found,
        Err(why) => {
            notes.push(format!("the original was not profiled, so recipes follow the static findings only: {why}"))
        }
    }
    let result = search(&req.text, config, cancel, &mut progress, proposer, &mut ev)?;
    // Re-verify the best candidates, fastest first, on two more seeds, one never seen.
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
    for node in ranked.into_iter().take(3) {
        let Ok(prepared) = ev.admit(&node.source) else { continue };
        if seeds[1..].iter().all(|&s| matches!(ev.verify(&prepared, s), Outcome::Ok { .. })) {
            // The search's best comes first; a later one is offered only if it failed the held-out check.
            let mut out = outcome_for(req, &ev.ctx.original, &result, Some(node), seeds.to_vec());
            out.notes.splice(0..0, notes);
            out.notes.extend(ev.tolerance_note(&prepared));
            out.devices = devices;
            return Ok(out);
        }
    }
    let mut out = outcome_for(req, &ev.ctx.original, &result, None, Vec::new());
    out.notes.splice(0..0, notes);
    out.notes.extend(why_nothing_offered(&result.tree, had_candidates_beyond_noise));
    out.notes.extend(ev.disagreement_note());
    out.devices = devices;
    out.title = format!("No verified faster version of {} found", req.kernel);
    Ok(out)
}

/// Why a search that timed faster candidates offers none: the user sees a
/// speedup in the tried list and deserves the reason it was not kept.
fn why_nothing_offered(tree: &kernelpro_search::Tree, had_candidates_beyond_noise: bool) -> Option<String> {
    if had_candidates_beyond_noise {
        return Some("the fastest candidates failed the check on the held-out input seeds, so none is offered".into());
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
fn profile_original(req: &OptimizeRequest, ctx: &Context) -> Result<Vec<FindingNote>, String> {
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
    };
    let report = ctx.handle.block_on(profile_file(&file, &req.settings, &ctx.analyzer, &ctx.cancel))?;
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

/// The built-in recipes, and the LLM too when the user enabled it.
fn proposers(req: &OptimizeRequest, cancel: &CancellationToken) -> (Box<dyn Proposer>, Vec<String>) {
    let recipes = kernelpro_recipes::RecipeProposer::new(&req.kernel).with(Box::new(kernelpro_cute::CuteGemmRecipe));
    if let Some(only) = &req.recipes {
        return (Box::new(recipes.only(only)), Vec::new());
    }
    let recipes = Box::new(recipes);
    if !req.settings.llm.enabled {
        return (recipes, Vec::new());
    }
    // A cancelled search ends the request in flight, not only the next one.
    match llm_proposer(req).map(|llm| llm.with_cancel(cancel.clone())) {
        Ok(llm) => (Box::new(kernelpro_search::RoundRobin::new(vec![recipes, Box::new(llm)])), Vec::new()),
        Err(why) => (recipes, vec![format!("the LLM proposer is not used: {why}")]),
    }
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
        kernelpro_cutlass::find_root(None, &kernelpro_core::toolchain::Env::for_settings(&req.settings).roots)
            .and_then(|root| kernelpro_cutlass::Index::build(&root).ok())
            .map(Arc::new);
    kernelpro_llm::LlmProposer::new(config, &req.kernel, cutlass).map_err(|e| e.to_string())
}

fn search(
    original: &str,
    config: SearchConfig,
    cancel: Arc<AtomicBool>,
    progress: &mut impl FnMut(&Progress),
    proposer: &mut dyn Proposer,
    evaluator: &mut dyn Evaluator,
) -> Result<kernelpro_search::SearchResult, String> {
    Search::new(config)
        .cancel_flag(cancel)
        .on_progress(|p| progress(p))
        .run(original, proposer, evaluator)
        .map_err(|e| baseline_failure(&e))
}

/// Why the search could not start, in words (never the enum's debug form).
fn baseline_failure(e: &kernelpro_search::SearchError) -> String {
    let kernelpro_search::SearchError::Baseline(outcome) = e;
    match outcome {
        Outcome::CompileError(why) => format!("the original kernel could not be compiled for the search: {why}"),
        Outcome::WrongOutput(why) => format!("the original kernel's output could not be checked: {why}"),
        Outcome::Timeout => "the original kernel did not finish within the run timeout".to_string(),
        Outcome::Crash(why) => format!("the original kernel failed to run: {why}"),
        Outcome::Ok { .. } => "the original kernel could not be measured".to_string(),
    }
}

fn outcome_for(
    req: &OptimizeRequest,
    original: &str,
    result: &kernelpro_search::SearchResult,
    best: Option<&kernelpro_search::Node>,
    seeds: Vec<u64>,
) -> OptimizeOutcome {
    let src = kernelpro_source::parse(original);
    let region = kernel_region(original, &src, &req.kernel);
    let edit = best.zip(region).and_then(|(n, r)| edit_within_region(original, &n.source, r).ok().flatten());
    let speedup = best.and_then(|n| n.speedup).unwrap_or(1.0);
    let steps: Vec<StepReport> = best
        .map(|n| {
            result
                .tree
                .path(n.id)
                .into_iter()
                .skip(1)
                .map(|id| {
                    let node = &result.tree.nodes()[id.0];
                    StepReport { recipe: node.recipe.clone(), answers: node.answers.clone(), speedup: node.speedup }
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
        notes.push(launch_note(original, &req.kernel, &launch, !sites.edits.is_empty()));
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
            "Apply optimized {}: {:.2}x faster{with_launch}, verified on {} seeds",
            req.kernel,
            speedup,
            seeds.len()
        ),
        verified_seeds: seeds,
        steps,
        tried: result.memory.entries().to_vec(),
        evaluations: result.evaluations,
        stop: format!("{:?}", result.stop),
        new_text,
        edit,
        launch_site_edits: sites.edits,
        stub: false,
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

/// What the user must do for a launch-changing edit: the spec's new launch
/// is what KernelPro runs; host code must launch the kernel so itself (the
/// edit does it for this file's launches it could write: `sites_updated`).
fn launch_note(original: &str, kernel: &str, changes: &[String], sites_updated: bool) -> String {
    // Only a larger dynamic shared memory needs the attribute raised.
    let smem = if changes.iter().any(|c| c.contains("`smem")) {
        ", and raise cudaFuncAttributeMaxDynamicSharedMemorySize to the new `smem` first"
    } else {
        ""
    };
    if sites_updated {
        return format!(
            "The edit changes the launch of `{kernel}` in its spec: {}, and this file's launch of it to match. The speedup is for that launch: host code in other files that launches `{kernel}` must use it too{smem}. The new kernel was also run under the old launch and gave the same output there (its speed there is not part of the measurement).",
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
        "The edit changes the launch of `{kernel}` in its spec: {}. The speedup is for that launch: host code that launches `{kernel}`{at} must use it{smem}. The new kernel was also run under the old launch and gave the same output there (its speed there is not part of the measurement).",
        changes.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_launch_note_names_the_changes_and_the_host_launches() {
        let original = "__global__ void k(float* y) {}\nint main() {\n  k<<<4, 256>>>(y);\n}\n";
        let note = launch_note(original, "k", &["`block = 256` → `block = 384`".into()], false);
        assert!(note.contains("the launch of `k` in its spec: `block = 256` → `block = 384`."), "{note}");
        assert!(note.contains("(this file launches it on line 3) must use it."), "{note}");
        let note = launch_note(original, "k", &["`none` → `smem = 1024`".into()], false);
        assert!(note.contains("must use it, and raise cudaFuncAttributeMaxDynamicSharedMemorySize"), "{note}");
    }

    #[test]
    fn a_failed_baseline_is_said_in_words() {
        let e = kernelpro_search::SearchError::Baseline(Outcome::CompileError("k.cu:3: error: expected a `;`".into()));
        assert_eq!(
            super::baseline_failure(&e),
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
