//! Evaluators for the search: the GPU harness (compile, verify against the
//! original on identical inputs, time, energy) and a stub for tests and demos
//! that compiles for real but invents the timing. The harness runs the
//! original several times per check: where it is nondeterministic (float
//! atomics), a candidate passes within `kernelpro_gpu::VARIATION_MULTIPLE`
//! times its measured variation, never beyond the spec's tolerance otherwise,
//! and the outcome's notes say which tolerance was used.

use crate::disagreement::Rejection;
use crate::guard::check_candidate;
use futures::StreamExt;
use futures::future::join_all;
use futures::stream::FuturesUnordered;
use kernelpro_config::settings::Settings;
use kernelpro_core::analysis::Analyzer;
use kernelpro_gpu::{Evaluation, HarnessError, Image, JobResult, Open, WorkerSession};
use kernelpro_measure::harness::{self, JobTuning, KernelSource, Prepared, RunOptions};
use kernelpro_search::{Evaluator, FindingNote, Outcome, candidate_id, normalize};
use kernelpro_source::SourceFile;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// What every evaluator shares: the original, how to compile, the kernel.
pub struct Context {
    pub path: PathBuf,
    pub original: String,
    pub original_src: SourceFile,
    pub kernel: String,
    pub settings: Settings,
    pub analyzer: Analyzer,
    pub handle: Handle,
    /// Ends the compiles and GPU jobs of the evaluators built on this context
    /// (the search's deadline or the caller's cancel); see [`Evaluate::set_cancel`].
    pub cancel: CancellationToken,
}

impl Context {
    async fn prepare(&self, source: &str, cancel: &CancellationToken) -> Result<Prepared, String> {
        let src = KernelSource { path: self.path.clone(), text: source.to_string(), kernel: Some(self.kernel.clone()) };
        let settings = cute_settings(source, &self.settings)?;
        // The original's SASS findings lead the proposers; a candidate's compile step is enough.
        harness::prepare_with(&src, &settings, &self.analyzer, cancel, source == self.original).await
    }

    /// Compiles and guards a candidate; the original is always accepted.
    async fn admit_async(&self, source: &str, cancel: &CancellationToken) -> Result<Prepared, Outcome> {
        if source != self.original {
            check_candidate(&self.original, &self.original_src, source, &self.kernel).map_err(|why| {
                tracing::debug!(%why, "rejected before compiling");
                Outcome::WrongOutput(format!("rejected: {why}"))
            })?;
        }
        let started = Instant::now();
        let prepared = self.prepare(source, cancel).await.map_err(Outcome::CompileError);
        let error = prepared.as_ref().err().and_then(Outcome::failure).and_then(|e| e.lines().next());
        tracing::debug!(
            ok = prepared.is_ok(),
            ms = started.elapsed().as_millis() as u64,
            error,
            "compiled a candidate"
        );
        prepared
    }
}

/// Findings of a compiled version, as the search hands them to proposers.
pub fn notes(p: &Prepared) -> Vec<FindingNote> {
    p.analysis
        .findings
        .iter()
        .filter(|f| f.kernel.is_none() || f.kernel.as_deref() == Some(p.job.launch.kernel.as_str()))
        .filter_map(|f| {
            Some(FindingNote {
                tool: f.code.clone()?,
                guidance: f.guidance.clone().unwrap_or_else(|| f.message.clone()),
            })
        })
        .collect()
}

type Admitted = Result<Prepared, Outcome>;

/// The compile side of the pipeline: every candidate compiled in a task of its
/// own (each compile waits for a place under `runner::jobs`, one per core, so
/// they use every core and never more), those the search may ask for next
/// compiled ahead while the GPU times the current ones. Keyed by normalized
/// source; dropping it kills what is still compiling.
struct Compiles {
    ctx: Arc<Context>,
    cancel: CancellationToken,
    ahead: HashMap<String, JoinHandle<Admitted>>,
    /// Started ahead, oldest first (deferred ones are not here: never dropped for a newer guess).
    order: VecDeque<String>,
    /// Compiles kept ahead at most: the machine's job places.
    cap: usize,
}

impl Compiles {
    fn new(ctx: Arc<Context>) -> Compiles {
        let cancel = ctx.cancel.clone();
        Compiles {
            ctx,
            cancel,
            ahead: HashMap::new(),
            order: VecDeque::new(),
            cap: kernelpro_runner::jobs::limit().size(),
        }
    }

    fn start(&self, source: &str) -> JoinHandle<Admitted> {
        let (ctx, cancel, source) = (self.ctx.clone(), self.cancel.clone(), source.to_string());
        let span = tracing::debug_span!("optimize.compile", candidate = %candidate_id(&source));
        self.ctx.handle.spawn(async move { ctx.admit_async(&source, &cancel).await }.instrument(span))
    }

    fn prefetch(&mut self, sources: &[&str]) {
        for s in sources {
            let key = normalize(s);
            if self.ahead.contains_key(&key) {
                continue;
            }
            while self.ahead.len() >= self.cap {
                // The oldest guess is the least likely to be asked for.
                let Some(old) = self.order.pop_front() else { break };
                if let Some(task) = self.ahead.remove(&old) {
                    task.abort();
                }
            }
            let task = self.start(s);
            self.ahead.insert(key.clone(), task);
            self.order.push_back(key);
        }
    }

    /// Starts the compiles of the candidates asked for next (the batch the
    /// search is about to evaluate), kept (never dropped for a newer guess).
    fn begin(&mut self, sources: &[&str]) {
        for s in sources {
            let key = normalize(s);
            if !self.ahead.contains_key(&key) {
                let task = self.start(s);
                self.ahead.insert(key.clone(), task);
            }
            self.order.retain(|k| *k != key);
        }
    }

    /// Whether `source`'s compile is a slow one still running (a CuTe or
    /// CUTLASS source: tens of seconds, where another takes a fraction of
    /// one; by the source, not the clock, so that a search's course does
    /// not depend on the machine's load): then it is started if it was not,
    /// kept compiling (never dropped for a newer guess) and the search
    /// evaluates other candidates meanwhile.
    fn defer(&mut self, source: &str) -> bool {
        if !uses_cutlass(source) {
            return false;
        }
        let key = normalize(source);
        match self.ahead.get(&key) {
            Some(task) if task.is_finished() => return false,
            Some(_) => {}
            None => {
                let task = self.start(source);
                self.ahead.insert(key.clone(), task);
            }
        }
        self.order.retain(|k| *k != key);
        true
    }

    /// The compile of `source`: the one started ahead, or a new one.
    fn take(&mut self, source: &str) -> JoinHandle<Admitted> {
        let key = normalize(source);
        match self.ahead.remove(&key) {
            Some(task) => {
                self.order.retain(|k| *k != key);
                task
            }
            None => self.start(source),
        }
    }

    fn set_cancel(&mut self, cancel: CancellationToken) {
        self.clear();
        self.cancel = cancel;
    }

    fn clear(&mut self) {
        for (_, task) in self.ahead.drain() {
            task.abort();
        }
        self.order.clear();
    }
}

impl Drop for Compiles {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Runs the batch through the pipeline: compiles in tasks of their own, and
/// `lanes` GPU lanes (candidate i on lane i % lanes), each running its
/// candidates one after another in the order their compiles end (`run(i,
/// lane, compiled)`): a slow compile does not hold up the lane's others.
/// Outcomes in the batch's order.
fn pipeline<F, Fut>(
    handle: &Handle,
    compiles: Vec<JoinHandle<Admitted>>,
    lanes: usize,
    waited: &Counters,
    run: F,
) -> Vec<Outcome>
where
    F: Fn(usize, usize, Prepared) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let lanes = lanes.max(1);
    let mut per_lane: Vec<Vec<(usize, JoinHandle<Admitted>)>> = (0..lanes).map(|_| Vec::new()).collect();
    for (i, c) in compiles.into_iter().enumerate() {
        per_lane[i % lanes].push((i, c));
    }
    let run = &run;
    let futures = per_lane.into_iter().enumerate().map(|(lane, mine)| async move {
        let mut out = Vec::new();
        let mut compiles: FuturesUnordered<_> =
            mine.into_iter().map(|(i, compile)| async move { (i, compile.await) }).collect();
        loop {
            let wait = Instant::now();
            let Some((i, admitted)) = compiles.next().await else { break };
            let admitted = admitted.unwrap_or_else(|e| Err(Outcome::Crash(format!("the compile task ended: {e}"))));
            waited.add(&waited.compile_wait_us, wait);
            let outcome = match admitted {
                Ok(p) => run(i, lane, p).await,
                Err(o) => o,
            };
            out.push((i, outcome));
        }
        out
    });
    let mut outcomes: Vec<(usize, Outcome)> = handle.block_on(join_all(futures)).into_iter().flatten().collect();
    outcomes.sort_by_key(|(i, _)| *i);
    outcomes.into_iter().map(|(_, o)| o).collect()
}

/// Where a search's evaluations spent their time, for `--json` (`pipeline`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PipelineStats {
    /// GPU workers started (one per device when none failed; 0 for the stub).
    pub worker_starts: u32,
    /// GPU jobs run (baseline, candidates, their runs under the original launch, held-out checks).
    pub gpu_jobs: u64,
    /// Wall time in GPU jobs, the waits for the device included.
    pub gpu_s: f64,
    /// Wall time the GPU lanes waited for a candidate's compile.
    pub compile_wait_s: f64,
    /// GPU jobs that measured energy (about a second each): the baseline and
    /// the candidate offered, when energy is asked for.
    pub energy_windows: u64,
    /// Runs of a launch-changing candidate under the original launch: one
    /// per candidate checked for an offer, none during the search.
    pub old_launch_runs: u64,
    /// Seconds in the proposers (the search's own time between evaluations; set by the search).
    pub propose_s: f64,
}

#[derive(Default)]
struct Counters {
    gpu_jobs: AtomicU64,
    gpu_us: AtomicU64,
    compile_wait_us: AtomicU64,
    energy_windows: AtomicU64,
    old_launch_runs: AtomicU64,
}

impl Counters {
    fn add(&self, counter: &AtomicU64, since: Instant) {
        counter.fetch_add(since.elapsed().as_micros() as u64, Ordering::Relaxed);
    }

    fn stats(&self, worker_starts: u32) -> PipelineStats {
        PipelineStats {
            worker_starts,
            gpu_jobs: self.gpu_jobs.load(Ordering::Relaxed),
            gpu_s: self.gpu_us.load(Ordering::Relaxed) as f64 / 1e6,
            compile_wait_s: self.compile_wait_us.load(Ordering::Relaxed) as f64 / 1e6,
            energy_windows: self.energy_windows.load(Ordering::Relaxed),
            old_launch_runs: self.old_launch_runs.load(Ordering::Relaxed),
            propose_s: 0.0,
        }
    }
}

/// What [`crate::optimize_with`] needs of an evaluator beyond the search's trait.
pub trait Evaluate: Evaluator {
    /// Where the evaluations' time went so far.
    fn pipeline_stats(&self) -> PipelineStats;

    /// The token that ends its compiles and GPU jobs from now on (a new phase:
    /// the search, then the held-out checks, each with its own deadline).
    fn set_cancel(&mut self, cancel: CancellationToken);
}

pub struct GpuEvaluator {
    pub ctx: Arc<Context>,
    pub run: RunOptions,
    compiles: Compiles,
    /// GPUs the candidates run on, one job per GPU at a time; the original's
    /// baseline and the final re-verification run on the first.
    devices: Vec<u32>,
    /// The original, compiled once: the reference for every candidate.
    reference: Option<Prepared>,
    /// The original's baseline time and energy (on the first device).
    baseline: Option<(f64, Option<f64>)>,
    /// How long the baseline's GPU job took (set-up included): candidates' jobs
    /// are given a timeout from it.
    baseline_job: Option<Duration>,
    /// Jobs are not given more time than is left before this.
    deadline: Option<Instant>,
    /// Input seed used during the search (the held-out seed is never used here).
    pub search_seed: u64,
    /// The original's Nsight Compute findings, handed to the proposers with
    /// its static ones (candidates are not profiled: it would triple each evaluation).
    pub profile_notes: Vec<FindingNote>,
    /// The tolerance each verified candidate was last checked with, in words
    /// (the spec's, or a multiple of a nondeterministic original's own variation).
    tolerances: Mutex<HashMap<String, String>>,
    /// Candidates rejected against a nondeterministic original: their worst elements.
    rejections: Mutex<Vec<Rejection>>,
    /// Candidates that verified, compiled: the held-out checks need no new compile.
    verified: Mutex<HashMap<String, Arc<Prepared>>>,
    /// One long-lived GPU worker per device, opened with the original once it is compiled
    /// (`kernelpro_gpu::WorkerSession`): candidates are verified and timed back to back there.
    sessions: HashMap<u32, tokio::sync::Mutex<WorkerSession>>,
    counters: Counters,
}

/// A prepared kernel's identity: its cubin's path (a temp dir of its own).
fn key(p: &Prepared) -> String {
    match &p.job.image {
        Image::Cubin(path) => path.display().to_string(),
        Image::Ptx(text) => text.clone(),
    }
}

/// Timed launches of a candidate take about this long at most: a 275 ms kernel
/// is timed three times (`kernelpro_gpu::MIN_SLOW_RUNS`), a fast one 20 times.
pub const CANDIDATE_TIMING_MS: u32 = 500;

impl GpuEvaluator {
    /// Runs everything on `run.device`; see [`GpuEvaluator::with_devices`].
    pub fn new(ctx: Context, run: RunOptions, search_seed: u64) -> Self {
        let devices = vec![run.device];
        let ctx = Arc::new(ctx);
        GpuEvaluator {
            compiles: Compiles::new(ctx.clone()),
            ctx,
            run,
            devices,
            reference: None,
            baseline: None,
            baseline_job: None,
            deadline: None,
            search_seed,
            profile_notes: Vec::new(),
            tolerances: Mutex::default(),
            rejections: Mutex::default(),
            verified: Mutex::default(),
            sessions: HashMap::new(),
            counters: Counters::default(),
        }
    }

    /// Spreads each batch of candidates over `devices` (candidate i on
    /// `devices[i % n]`); repeats are dropped, an empty list keeps the current one.
    pub fn with_devices(mut self, devices: &[u32]) -> Self {
        let mut unique = Vec::new();
        for &d in devices {
            if !unique.contains(&d) {
                unique.push(d);
            }
        }
        if !unique.is_empty() {
            self.run.device = unique[0];
            self.devices = unique;
        }
        self
    }

    /// No job is given more time than is left before `at`.
    pub fn with_deadline(mut self, at: Instant) -> Self {
        self.deadline = Some(at);
        self
    }

    /// As [`GpuEvaluator::with_deadline`], for a later phase (the held-out checks).
    pub fn set_deadline(&mut self, at: Instant) {
        self.deadline = Some(at);
    }

    pub fn devices(&self) -> &[u32] {
        &self.devices
    }

    /// Which tolerance `candidate`'s last passing verification used, e.g.
    /// `verified with seed 43: `out` within rtol=1e-5 atol=4e-1: 8x the original's own run-to-run variation (…)`.
    pub fn tolerance_note(&self, candidate: &Prepared) -> Option<String> {
        self.tolerances.lock().expect("not poisoned").get(&key(candidate)).cloned()
    }

    /// Where rejected candidates agree with each other but not with a nondeterministic original:
    /// what the user can do about it ([`crate::disagreement::note`]).
    pub fn disagreement_note(&self) -> Option<String> {
        crate::disagreement::note(&self.rejections.lock().expect("not poisoned"))
    }

    /// Runs `candidate` against the original with inputs from `seed`, on the
    /// first device; with `energy` (and energy asked for), its job also
    /// measures the energy per launch. Its own launch only: see
    /// [`GpuEvaluator::verify_old_launch`].
    pub fn verify(&self, candidate: &Prepared, seed: u64, energy: bool) -> Outcome {
        let Some(reference) = &self.reference else { return Outcome::Crash("the original was not run first".into()) };
        self.ctx.handle.block_on(self.measure(candidate, None, Some(reference), seed, self.devices[0], energy))
    }

    /// A candidate that changes the launch must also be correct under the
    /// original's launch, where host code that was not updated still launches
    /// it (its time there does not count): one more job, run for a candidate
    /// about to be offered only (the search's candidates are not, so each
    /// costs one job). `None` when it keeps the original's launch; else its
    /// outcome there, the failure explained.
    pub fn verify_old_launch(&self, candidate: &Prepared, seed: u64) -> Option<Outcome> {
        let reference = self.reference.as_ref()?;
        let (new, old) = (&candidate.job.launch, &reference.job.launch);
        if (new.grid, new.block, new.smem) == (old.grid, old.block, old.smem) {
            return None;
        }
        let under_old = |why: String| {
            format!(
                "it changes the launch, and under the original launch (which host code that is not updated still uses) {why}"
            )
        };
        self.counters.old_launch_runs.fetch_add(1, Ordering::Relaxed);
        let outcome = self.ctx.handle.block_on(self.measure(
            candidate,
            Some(reference),
            Some(reference),
            seed,
            self.devices[0],
            false,
        ));
        Some(match outcome {
            ok @ Outcome::Ok { .. } => ok,
            Outcome::WrongOutput(why) => Outcome::WrongOutput(under_old(format!("its output is wrong: {why}"))),
            Outcome::Timeout => Outcome::WrongOutput(under_old("it timed out".into())),
            Outcome::Crash(why) | Outcome::CompileError(why) => Outcome::Crash(under_old(format!("it failed: {why}"))),
        })
    }

    /// How a job is run: the baseline as a plain run; a candidate's quicker
    /// (the reference timed only on other GPUs, a wrong one not timed, half a
    /// second of timed launches) and within the time left and a few times the
    /// baseline's own job (a candidate far slower than the original is no answer).
    fn tuning(&self, baseline: bool, device: u32) -> JobTuning {
        let mut t = JobTuning::default();
        if !baseline {
            t.time_reference = device != self.devices[0];
            t.time_if_wrong = false;
            t.timing_budget_ms = CANDIDATE_TIMING_MS;
            t.timeout = self.baseline_job.map(|b| (b * 4 + Duration::from_secs(2)).max(Duration::from_secs(5)));
        }
        if let Some(d) = self.deadline {
            let left = d.saturating_duration_since(Instant::now()).max(Duration::from_secs(1));
            t.timeout = Some(t.timeout.map_or(left, |x| x.min(left)));
        }
        t
    }

    /// Times `kernel` on `device` with inputs from `seed` (and the launch of
    /// `launch_of` instead of its own, when given), checking its outputs
    /// against `reference` (run on the same inputs) when one is given.
    ///
    /// On a device other than the baseline's, the time (and energy) is scaled
    /// by how the original, timed in the same job as the reference, compares
    /// with its baseline: speedups stay comparable across unequal GPUs.
    /// With `energy` (and `run.energy`) its job also measures energy over
    /// NVML's window (about a second): only the baseline and a candidate about
    /// to be offered do; the search's candidates are compared on time.
    async fn measure(
        &self,
        kernel: &Prepared,
        launch_of: Option<&Prepared>,
        reference: Option<&Prepared>,
        seed: u64,
        device: u32,
        energy: bool,
    ) -> Outcome {
        let with_seed = |p: &Prepared| {
            let mut job = p.job.clone();
            job.launch.seed = seed;
            job
        };
        let mut job = with_seed(kernel);
        if let Some(l) = launch_of.map(|p| &p.job.launch) {
            (job.launch.grid, job.launch.block, job.launch.smem) = (l.grid, l.block, l.smem);
        }
        let reference = reference.map(with_seed);
        let tuning = self.tuning(reference.is_none(), device);
        // One job verifies (against the reference, when given) and times the kernel.
        let span = tracing::debug_span!(
            "optimize.gpu_job",
            candidate = %candidate_id(&kernel.analysis.text),
            device,
            seed,
            baseline = reference.is_none()
        );
        let started = Instant::now();
        let energy = energy && self.run.energy;
        let result = self.in_session(job, reference.is_some(), device, &tuning, energy).instrument(span.clone()).await;
        self.counters.gpu_jobs.fetch_add(1, Ordering::Relaxed);
        if energy {
            self.counters.energy_windows.fetch_add(1, Ordering::Relaxed);
        }
        self.counters.add(&self.counters.gpu_us, started);
        span.in_scope(|| match &result {
            Ok(r) => tracing::debug!(
                ms = started.elapsed().as_millis() as u64,
                correct = r.correct(),
                median_ms = r.kernel.timing.median_ms,
                runs = r.kernel.timing.runs,
                "GPU job ended"
            ),
            Err(error) => tracing::debug!(ms = started.elapsed().as_millis() as u64, %error, "GPU job failed"),
        });
        match result {
            Err(HarnessError::Timeout { .. }) => Outcome::Timeout,
            Err(e) => Outcome::Crash(e.to_string()),
            Ok(r) if !r.correct() => {
                // The search's own checks only: they share one seed, so their values compare.
                if launch_of.is_none() && seed == self.search_seed {
                    let mut rejections = self.rejections.lock().expect("not poisoned");
                    rejections.extend(r.comparison.iter().filter_map(Rejection::from_comparison));
                }
                let worst: Vec<String> = r
                    .comparison
                    .iter()
                    .filter(|c| c.bad > 0)
                    .map(|c| {
                        format!(
                            "{}: {} of {} elements outside {}; {}",
                            c.name,
                            c.bad,
                            c.count,
                            c.tolerance_note(),
                            c.worst_note("original").unwrap_or_else(|| "no single worst element".into())
                        )
                    })
                    .collect();
                Outcome::WrongOutput(worst.join("; "))
            }
            Ok(r) => {
                if launch_of.is_none() && !r.comparison.is_empty() {
                    let used: Vec<String> =
                        r.comparison.iter().map(|c| format!("`{}` within {}", c.name, c.tolerance_note())).collect();
                    self.tolerances
                        .lock()
                        .expect("not poisoned")
                        .insert(key(kernel), format!("verified with seed {seed}: {}", used.join("; ")));
                }
                let t = &r.kernel.timing;
                let mut time_s = t.median_ms / 1e3;
                let mut energy_j = r.kernel.energy.as_ref().ok().map(|e| e.joules_per_launch);
                let mut noise = noise_ms(t) / 1e3;
                let original = r.reference.as_ref().filter(|o| o.timing.median_ms > 0.0);
                if let (true, Some((base_s, base_j)), Some(o)) = (device != self.devices[0], self.baseline, original) {
                    let factor = base_s / (o.timing.median_ms / 1e3);
                    let original_noise = noise_ms(&o.timing) / o.timing.median_ms;
                    time_s *= factor;
                    noise = noise * factor + time_s * original_noise;
                    let original_j = o.energy.as_ref().ok().map(|e| e.joules_per_launch).filter(|j| *j > 0.0);
                    energy_j = match (energy_j, base_j, original_j) {
                        (Some(j), Some(b), Some(oj)) => Some(j * b / oj),
                        _ => None,
                    };
                }
                Outcome::Ok { time_s, energy_j, noise, findings: notes(kernel) }
            }
        }
    }

    /// Runs `job` in the device's long-lived worker (the original is its
    /// reference: `compare` checks the outputs against it), with the energy
    /// window when `energy`. Without a session (no original yet) it is a
    /// one-shot job, as `kernelpro run`'s.
    async fn in_session(
        &self,
        job: kernelpro_gpu::KernelJob,
        compare: bool,
        device: u32,
        tuning: &JobTuning,
        energy: bool,
    ) -> Result<JobResult, HarnessError> {
        let (settings, mut run) = runner_for(&self.ctx.settings, &self.run, device);
        run.energy = energy;
        let Some(session) = self.sessions.get(&device) else {
            let reference = if compare { self.reference.as_ref().map(|r| r.job.clone()) } else { None };
            return harness::run_tuned(&job, reference.as_ref(), &settings, &run, tuning).await;
        };
        let evaluation = Evaluation {
            kernel: job,
            compare,
            warmup: run.warmup,
            runs: run.runs,
            energy_window_ms: harness::energy_window_ms(run.energy),
            time_reference: tuning.time_reference,
            time_if_wrong: tuning.time_if_wrong,
            timing_budget_ms: tuning.timing_budget_ms,
        };
        let timeout = harness::job_timeout(&settings, run.energy, tuning, evaluation.setup_allowance());
        session.lock().await.evaluate(&evaluation, timeout, &run.cancel).await
    }

    /// One worker session per device, each opened with the original (`reference`).
    fn open_sessions(&mut self, reference: &Prepared) {
        for &device in &self.devices {
            let (settings, run) = runner_for(&self.ctx.settings, &self.run, device);
            let mut original = reference.job.clone();
            original.launch.seed = self.search_seed;
            let open = Open { device: run.device, reference: original, flush_l2: true };
            self.sessions.insert(device, tokio::sync::Mutex::new(WorkerSession::new(&run.exe, &settings.runner, open)));
        }
    }

    /// Workers started so far over all devices (one per device when nothing failed).
    pub fn worker_starts(&self) -> u32 {
        self.sessions.values().map(|s| s.try_lock().map_or(0, |s| s.starts)).sum()
    }

    /// A candidate compiled and guarded: the one the search verified, else a new compile.
    pub fn admit(&self, source: &str) -> Result<Arc<Prepared>, Outcome> {
        if let Some(p) = self.verified.lock().expect("not poisoned").get(&normalize(source)) {
            return Ok(p.clone());
        }
        self.ctx.handle.block_on(self.ctx.admit_async(source, &self.run.cancel)).map(Arc::new)
    }

    /// The baseline: the original alone, on the search seed and the first
    /// device; it is then the reference.
    fn baseline(&mut self, prepared: Prepared) -> Outcome {
        self.open_sessions(&prepared);
        let started = Instant::now();
        let mut outcome =
            self.ctx.handle.block_on(self.measure(&prepared, None, None, self.search_seed, self.devices[0], true));
        if let Outcome::Ok { time_s, energy_j, findings, .. } = &mut outcome {
            self.baseline = Some((*time_s, *energy_j));
            self.baseline_job = Some(started.elapsed());
            // Measured findings first: the proposers try the recipes answering them first.
            findings.splice(0..0, self.profile_notes.iter().cloned());
        }
        self.reference = Some(prepared);
        outcome
    }
}

impl Evaluator for GpuEvaluator {
    fn evaluate(&mut self, source: &str) -> Outcome {
        if source == self.ctx.original {
            let compile = self.compiles.take(source);
            let admitted = self.ctx.handle.block_on(compile).unwrap_or_else(|e| Err(Outcome::Crash(e.to_string())));
            return match admitted {
                Ok(p) => self.baseline(p),
                Err(o) => o,
            };
        }
        if self.reference.is_none() {
            return Outcome::Crash("the original was not run first".into());
        }
        self.evaluate_batch(&[source]).pop().expect("one outcome per source")
    }

    /// Compiles and guards the candidates concurrently (those compiled ahead
    /// are ready already), and runs candidate i on `devices[i % n]` as soon as
    /// it is compiled, the devices concurrently and each device's jobs one
    /// after another (two timing runs never share a GPU).
    fn evaluate_batch(&mut self, sources: &[&str]) -> Vec<Outcome> {
        if self.reference.is_none() || sources.contains(&self.ctx.original.as_str()) {
            // The baseline runs first and alone.
            return sources.iter().map(|s| self.evaluate(s)).collect();
        }
        let compiles: Vec<JoinHandle<Admitted>> = sources.iter().map(|s| self.compiles.take(s)).collect();
        let this = &*self;
        pipeline(&self.ctx.handle, compiles, self.devices.len(), &self.counters, |i, lane, p| async move {
            // Time only: no energy window and no run under the original launch
            // (both are for the candidate offered, after the search).
            let Some(reference) = &this.reference else {
                return Outcome::Crash("the original was not run first".into());
            };
            let outcome = this.measure(&p, None, Some(reference), this.search_seed, this.devices[lane], false).await;
            if outcome.is_ok() {
                this.verified.lock().expect("not poisoned").insert(normalize(sources[i]), Arc::new(p));
            }
            outcome
        })
    }

    /// Two at least, even on one GPU: the batch's compiles run together and
    /// the GPU takes whichever is compiled first (see [`pipeline`]).
    fn parallelism(&self) -> usize {
        self.devices.len().max(2)
    }

    fn defer(&mut self, source: &str) -> bool {
        self.compiles.defer(source)
    }

    fn begin(&mut self, sources: &[&str]) {
        self.compiles.begin(sources);
    }

    fn prefetch(&mut self, sources: &[&str]) {
        self.compiles.prefetch(sources);
    }

    /// Half the compile places: the rest stay free for the candidates asked for now.
    fn lookahead(&self) -> usize {
        (self.compiles.cap / 2).max(1)
    }
}

impl Evaluate for GpuEvaluator {
    fn pipeline_stats(&self) -> PipelineStats {
        self.counters.stats(self.worker_starts())
    }

    fn set_cancel(&mut self, cancel: CancellationToken) {
        self.compiles.set_cancel(cancel.clone());
        self.run.cancel = cancel;
    }
}

/// The uncertainty of a median time: two standard deviations, at least 1%.
fn noise_ms(t: &kernelpro_gpu::Timing) -> f64 {
    (2.0 * t.stddev_ms).max(0.01 * t.median_ms)
}

/// The settings and options of a job on `device`. A runner that names
/// `{device}` (e.g. `env CUDA_VISIBLE_DEVICES={device}`, `srun -w gpu{device}`)
/// gets the index there and picks the GPU itself: the job then asks for the
/// first device it sees. Otherwise the job asks for `device`.
fn runner_for(settings: &Settings, run: &RunOptions, device: u32) -> (Settings, RunOptions) {
    let mut settings = settings.clone();
    if settings.runner.iter().any(|a| a.contains("{device}")) {
        settings.runner = settings.runner.iter().map(|a| a.replace("{device}", &device.to_string())).collect();
        (settings, RunOptions { device: 0, ..run.clone() })
    } else {
        (settings, RunOptions { device, ..run.clone() })
    }
}

/// `stub:SPEEDUP[:LAUNCH]`: compiles and guards every candidate for real, then
/// reports the original at 1 ms and every admitted candidate SPEEDUP times
/// faster (LAUNCH times, when given, for one that changes the launch: tests of
/// the launch-changing edit). It takes the batch path as a multi-GPU
/// evaluator does (the same pipeline: compiles ahead and concurrent, lanes in
/// its stead of GPUs), at least two candidates at a time. With `gpu_time`, each
/// of its lanes spends that long on every candidate (and the baseline), as a
/// slow kernel's GPU job would: tests of the deadline, and the pipeline's
/// throughput measured on a machine without a GPU.
pub struct StubEvaluator {
    pub ctx: Arc<Context>,
    pub speedup: f64,
    pub launch_speedup: Option<f64>,
    /// As many as the devices it stands in for, at least 2.
    pub parallelism: usize,
    /// An imported profile's findings, given with the original's like the GPU evaluator's.
    pub profile_notes: Vec<FindingNote>,
    /// What each simulated GPU job takes (zero: none).
    pub gpu_time: Duration,
    compiles: Compiles,
    cancel: CancellationToken,
    counters: Counters,
}

impl StubEvaluator {
    pub fn new(ctx: Context, speedup: f64) -> StubEvaluator {
        let ctx = Arc::new(ctx);
        StubEvaluator {
            compiles: Compiles::new(ctx.clone()),
            cancel: ctx.cancel.clone(),
            ctx,
            speedup,
            launch_speedup: None,
            parallelism: 2,
            profile_notes: Vec::new(),
            gpu_time: Duration::ZERO,
            counters: Counters::default(),
        }
    }

    fn outcome(&self, source: &str, p: &Prepared) -> Outcome {
        let original = source == self.ctx.original;
        let speedup = match self.launch_speedup {
            Some(s) if !crate::guard::launch_changes(&self.ctx.original, source, &self.ctx.kernel).is_empty() => s,
            _ => self.speedup,
        };
        let ms = if original { 1.0 } else { 1.0 / speedup };
        let mut findings = notes(p);
        if original {
            findings.splice(0..0, self.profile_notes.iter().cloned());
        }
        Outcome::Ok { time_s: ms / 1e3, energy_j: None, noise: 1e-6, findings }
    }

    /// The simulated GPU job: `gpu_time`, ended early by the cancel.
    async fn gpu_job(&self) -> Result<(), Outcome> {
        if self.gpu_time.is_zero() {
            return Ok(());
        }
        tokio::select! {
            () = tokio::time::sleep(self.gpu_time) => Ok(()),
            () = self.cancel.cancelled() => Err(Outcome::Crash("the GPU work was cancelled".into())),
        }
    }
}

impl Evaluator for StubEvaluator {
    fn evaluate(&mut self, source: &str) -> Outcome {
        self.evaluate_batch(&[source]).pop().expect("one outcome per source")
    }

    fn evaluate_batch(&mut self, sources: &[&str]) -> Vec<Outcome> {
        let compiles: Vec<JoinHandle<Admitted>> = sources.iter().map(|s| self.compiles.take(s)).collect();
        let this = &*self;
        pipeline(&self.ctx.handle, compiles, self.parallelism(), &self.counters, |i, lane, p| {
            let span = tracing::debug_span!("optimize.stub_job", candidate = %candidate_id(sources[i]), lane);
            async move {
                let started = Instant::now();
                let job = this.gpu_job().await;
                this.counters.gpu_jobs.fetch_add(1, Ordering::Relaxed);
                this.counters.add(&this.counters.gpu_us, started);
                let outcome = match job {
                    Ok(()) => this.outcome(sources[i], &p),
                    Err(o) => o,
                };
                let ms = started.elapsed().as_millis() as u64;
                tracing::debug!(ms, time_s = outcome.time_s(), "stub timing (invented, not measured)");
                outcome
            }
            .instrument(span)
        })
    }

    fn parallelism(&self) -> usize {
        self.parallelism.max(2)
    }

    fn defer(&mut self, source: &str) -> bool {
        self.compiles.defer(source)
    }

    fn begin(&mut self, sources: &[&str]) {
        self.compiles.begin(sources);
    }

    fn prefetch(&mut self, sources: &[&str]) {
        self.compiles.prefetch(sources);
    }

    /// Half the compile places: the rest stay free for the candidates asked for now.
    fn lookahead(&self) -> usize {
        (self.compiles.cap / 2).max(1)
    }
}

impl Evaluate for StubEvaluator {
    fn pipeline_stats(&self) -> PipelineStats {
        self.counters.stats(0)
    }

    fn set_cancel(&mut self, cancel: CancellationToken) {
        self.compiles.set_cancel(cancel.clone());
        self.cancel = cancel;
    }
}

/// A CuTe or CUTLASS source: its compile takes tens of seconds.
fn uses_cutlass(source: &str) -> bool {
    source.contains("#include <cute/") || source.contains("#include <cutlass/") || source.contains("#include \"cute/")
}

/// CuTe/CUTLASS candidates need C++17, relaxed constexpr, the CUTLASS headers,
/// and `sm_90a` on Hopper for WGMMA and TMA.
pub fn cute_settings(source: &str, settings: &Settings) -> Result<Settings, String> {
    if !uses_cutlass(source) {
        return Ok(settings.clone());
    }
    let include =
        kernelpro_cute::cutlass_include(None, &kernelpro_toolchain::toolchain::Env::for_settings(settings).roots)?;
    let mut s = settings.clone();
    // The compile step sets the architecture itself.
    s.extra_flags
        .extend(kernelpro_cute::cute_flags(&s.arch, &include).into_iter().filter(|f| !f.starts_with("-arch=")));
    s.arch = kernelpro_cute::cute_arch(&s.arch);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> RunOptions {
        RunOptions {
            exe: "kernelpro".into(),
            runs: 20,
            warmup: 3,
            energy: false,
            device: 0,
            cancel: Default::default(),
        }
    }

    #[test]
    fn a_runner_naming_the_device_picks_it_itself() {
        let plain = Settings { runner: vec!["srun".into(), "-G1".into()], ..Settings::default() };
        let (s, r) = runner_for(&plain, &options(), 2);
        assert_eq!((s.runner, r.device), (plain.runner.clone(), 2));

        let naming =
            Settings { runner: vec!["env".into(), "CUDA_VISIBLE_DEVICES={device}".into()], ..Settings::default() };
        let (s, r) = runner_for(&naming, &options(), 2);
        assert_eq!((s.runner, r.device), (vec!["env".to_string(), "CUDA_VISIBLE_DEVICES=2".into()], 0));
    }
}
