//! Two-stage profiling with Nsight Compute, in one launch: stage 1's counters
//! (SpeedOfLight, LaunchStats, Occupancy + roofline) classify every kernel,
//! and stage 2 runs only the tools of that class, over counters collected in
//! the same pass (every tool's metrics and the per-line source counters), so
//! a profile pays one ncu start-up, not two (`bench/probes/ncu_one_pass.sh`). The analysis of the exported pages is
//! pure (`analyze_exports`), so recordings from elsewhere (`--import`) give
//! the same findings as a live run.

use kernelpro_model::{Finding, Severity, Span};
use kernelpro_profile::ncu_args::{self, ClockControl, Output, Page, ProfileOptions};
use kernelpro_profile::tools::{self, Tool, ToolInput};
use kernelpro_profile::{
    KernelProfile, SourcePage, Thresholds, Triage, TriageThresholds, parse_raw, parse_source, triage,
};
use kernelpro_runner::process::{ToolCommand, ToolError, run_tool};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// What profiling found for one kernel.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KernelReport {
    pub kernel: String,
    pub triage: Option<Triage>,
    /// The micro-profiling tools that ran for its class.
    pub tools: Vec<String>,
    pub findings: Vec<Finding>,
}

/// One step of a profile and its seconds (the report's `stages`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stage {
    pub name: String,
    pub secs: f64,
}

impl Stage {
    pub fn new(name: String, took: Duration) -> Stage {
        Stage { name, secs: took.as_secs_f64() }
    }
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ProfileReport {
    pub kernels: Vec<KernelReport>,
    /// The one ncu launch (both stages' counters), the program's run included.
    pub pass_secs: f64,
    /// Exporting the source pages from its report, after the pass.
    pub export_secs: f64,
    /// Problems that did not stop the analysis (a page that failed to export...).
    pub notes: Vec<String>,
    /// Which profiler gave the counters: `ncu` or `cupti` (in-process); empty for imported pages.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub backend: String,
    /// Each step's seconds, in order (the compile of the program or of each
    /// kernel's harness job, the profiler's runs, the library's own steps
    /// within them, disassembly, exports), for `bench/profile_table.py`'s
    /// shares; a kernel's steps are named after it in harness mode.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
    /// Kernels whose report is the last profile's, kept: they did not change since ([`crate::reuse`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    /// Where this report can serve the next save's profile as its
    /// [`crate::reuse::LastProfile`] (a program's in-process profile): what it depended on.
    #[serde(skip)]
    pub reuse_key: Option<String>,
}

impl ProfileReport {
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.kernels.iter().flat_map(|k| k.findings.iter())
    }
}

/// The exported CSV pages of one profile.
#[derive(Debug, Clone, Default)]
pub struct Exports {
    pub stage1_raw: String,
    /// Stage 2's (or `--set full`'s) raw page; `None` when only stage 1 ran.
    pub stage2_raw: Option<String>,
    /// One source page per kernel.
    pub sources: Vec<String>,
}

impl Exports {
    /// Reads a folder of recorded pages: `stage1_raw.csv` (or `sol_raw.csv`,
    /// else `full_raw.csv`), `stage2_raw.csv` or `full_raw.csv`, and `src_*.csv`.
    pub fn from_dir(dir: &Path) -> Result<Exports, String> {
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
        let stage2_raw = read("stage2_raw.csv").or_else(|| read("full_raw.csv"));
        let stage1_raw = read("stage1_raw.csv")
            .or_else(|| stage2_raw.clone())
            .or_else(|| read("sol_raw.csv"))
            .ok_or_else(|| format!("{}: no stage1_raw.csv, full_raw.csv or sol_raw.csv (export with `ncu -i REPORT --csv --page raw --print-units base`)", dir.display()))?;
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("src_") && n.ends_with(".csv"))
            })
            .collect();
        names.sort();
        let sources = names.iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect();
        Ok(Exports { stage1_raw, stage2_raw, sources })
    }
}

impl Exports {
    /// Writes the pages in the layout `from_dir` reads.
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("stage1_raw.csv"), &self.stage1_raw)?;
        if let Some(s2) = &self.stage2_raw {
            std::fs::write(dir.join("stage2_raw.csv"), s2)?;
        }
        for page in &self.sources {
            let kernel = parse_source(page)
                .ok()
                .and_then(|p| p.first().map(|p| p.kernel.clone()))
                .unwrap_or_else(|| "unknown".into());
            std::fs::write(dir.join(format!("src_{kernel}.csv")), page)?;
        }
        Ok(())
    }
}

/// Triage and micro-profiling tools over exported pages.
pub fn analyze_exports(exports: &Exports, file_text: &str, thresholds: &Thresholds) -> Result<ProfileReport, String> {
    let stage1 = parse_raw(&exports.stage1_raw).map_err(|e| format!("stage-1 raw page: {}", e.0))?;
    let stage2 = match &exports.stage2_raw {
        Some(t) => parse_raw(t).map_err(|e| format!("stage-2 raw page: {}", e.0))?,
        None => Vec::new(),
    };
    let mut notes = Vec::new();
    let mut pages: Vec<SourcePage> = Vec::new();
    for s in &exports.sources {
        match parse_source(s) {
            Ok(p) => pages.extend(p),
            Err(e) => notes.push(format!("a source page could not be read: {}", e.0)),
        }
    }
    Ok(analyze_profiles(&stage1, &stage2, &pages, notes, file_text, thresholds))
}

/// Triage and micro-profiling tools over parsed profiles and source pages,
/// whichever profiler gave them (ncu's pages, or the in-process CUPTI library's
/// output: `kernelpro_profile::cupti`).
pub fn analyze_profiles(
    stage1: &[KernelProfile],
    stage2: &[KernelProfile],
    pages: &[SourcePage],
    notes: Vec<String>,
    file_text: &str,
    thresholds: &Thresholds,
) -> ProfileReport {
    let lines: Vec<&str> = file_text.lines().collect();
    let mut report = ProfileReport { notes, ..Default::default() };
    let mut seen = std::collections::HashSet::new();
    for p1 in stage1 {
        if !seen.insert(p1.kernel.clone()) {
            continue; // the first launch of each kernel stands for it
        }
        let merged = merge(p1, stage2.iter().find(|p| p.kernel == p1.kernel));
        let tri = triage(&merged, &TriageThresholds::default());
        let selected: Vec<&Tool> = match &tri {
            Some(t) => tools::select_tools(t.class),
            None => tools::TOOLS.iter().collect(),
        };
        let page = pages.iter().find(|p| p.kernel == p1.kernel);
        let input = ToolInput {
            profile: &merged,
            source: page,
            triage: tri.as_ref(),
            source_lines: &lines,
            thresholds,
            launch_overhead_pct: None,
        };
        let mut findings = dedupe(tools::analyze(&selected, &input));
        for f in &mut findings {
            f.kernel.get_or_insert_with(|| p1.kernel.clone());
        }
        report.kernels.push(KernelReport {
            kernel: p1.kernel.clone(),
            triage: tri,
            tools: selected.iter().map(|t| t.name().to_string()).collect(),
            findings,
        });
    }
    report
}

/// Stage-2 metrics, completed with stage 1's where stage 2 lacks them.
fn merge(stage1: &KernelProfile, stage2: Option<&KernelProfile>) -> KernelProfile {
    stage2.map_or_else(|| stage1.clone(), |s2| s2.completed_with(stage1))
}

/// Several tools can point at the same line for the same cause: keep the
/// most severe finding per (line, tool).
fn dedupe(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for f in findings {
        if !out.iter().any(|o| o.span == f.span && o.code == f.code) {
            out.push(f);
        }
    }
    out
}

/// How to run a live profile.
#[derive(Debug, Clone)]
pub struct LiveProfile {
    pub ncu: PathBuf,
    /// The program to profile and its arguments (the harness worker, or the file's own program).
    pub target: Vec<String>,
    /// Fed to the target's stdin (the harness job).
    pub stdin: Option<Vec<u8>>,
    pub clock_control: ClockControl,
    /// Only these kernels (a regex over names).
    pub kernel_regex: Option<String>,
    pub timeout: Duration,
    /// Profile with `--set full` instead of the two stages, for comparison.
    pub full: bool,
    /// Profile only the first N matching launches (the harness launches a kernel many times).
    pub launch_count: Option<u32>,
    /// Also write the exported pages here, for `--import` elsewhere.
    pub save_exports: Option<PathBuf>,
}

/// A profiler failure in words a user can act on.
pub fn explain_ncu_failure(output: &str) -> String {
    if output.contains("ERR_NVGPUCTRPERM") {
        return "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM). Run as root or with CAP_PERFMON/CAP_SYS_ADMIN (containers: --cap-add=SYS_ADMIN), or have an admin set NVreg_RestrictProfilingToAdminUsers=0. Compile, SASS and timing still work.".into();
    }
    if output.contains("No kernels were profiled") {
        return "ncu ran the program but profiled no kernel: check the kernel filter and that the program launches it"
            .into();
    }
    let tail: Vec<&str> =
        output.lines().filter(|l| !l.trim().is_empty()).rev().take(6).collect::<Vec<_>>().into_iter().rev().collect();
    format!("ncu failed: {}", tail.join(" | "))
}

#[tracing::instrument(level = "debug", name = "profile.ncu", skip_all, fields(kernel = req.kernel_regex.as_deref(), full = req.full))]
pub async fn profile_live(
    req: &LiveProfile,
    file_text: &str,
    thresholds: &Thresholds,
    cancel: &CancellationToken,
) -> Result<ProfileReport, String> {
    let dir = tempfile::Builder::new()
        .prefix("kernelpro-ncu-")
        .tempdir()
        .map_err(|e| format!("cannot make a temp dir: {e}"))?;
    let report_of = |name: &str| dir.path().join(name).display().to_string();
    let opts = |output: Output| ProfileOptions {
        clock_control: req.clock_control,
        kernel_regex: req.kernel_regex.clone(),
        output,
    };
    let start = Instant::now();
    let mut exports = Exports::default();
    // One launch: the triage counters and every tool's, into a report (for the
    // source pages) whose raw page ncu also prints as CSV as the pass ends.
    // `--full`: ncu's full set instead, for comparison.
    let (collection, report) = if req.full {
        (ncu_args::full_collection(), report_of("full"))
    } else {
        (tools::one_pass_collection(), report_of("profile"))
    };
    let csv = report_of("raw.csv");
    let output = Output::ReportAndRawCsv { report: report.clone(), csv: csv.clone() };
    exports.stage1_raw =
        ncu_pass(req, ncu_args::profile_args(&collection, &opts(output)), Some(Path::new(&csv)), cancel).await?;
    let profiles = parse_raw(&exports.stage1_raw).map_err(|e| format!("raw page: {}", e.0))?;
    let pass_secs = start.elapsed().as_secs_f64();
    // The source pages, one per kernel, side by side: each export is an ncu
    // process that spends most of its time loading the report.
    let mut kernels: Vec<String> = profiles.into_iter().map(|p| p.kernel).collect();
    let mut seen = std::collections::HashSet::new();
    kernels.retain(|k| seen.insert(k.clone()));
    let t_export = Instant::now();
    let pages =
        futures::future::join_all(kernels.iter().map(|k| export(req, &report, Page::Source, Some(k), cancel))).await;
    let mut notes = Vec::new();
    for (k, page) in kernels.iter().zip(pages) {
        match page {
            Ok(page) => exports.sources.push(page),
            Err(e) => notes.push(format!("no source page for {k}: {e}")),
        }
    }
    let export_secs = t_export.elapsed().as_secs_f64();
    tracing::debug!(kernels = kernels.len(), pass_secs, export_secs, "profiled");
    if let Some(dir) = &req.save_exports {
        exports.save(dir).map_err(|e| format!("cannot save the exports to {}: {e}", dir.display()))?;
    }
    let mut report = analyze_exports(&exports, file_text, thresholds)?;
    report.backend = "ncu".into();
    report.pass_secs = pass_secs;
    report.export_secs = export_secs;
    report.stages = vec![
        Stage { name: "ncu launch".into(), secs: pass_secs },
        Stage { name: "ncu source-page exports".into(), secs: export_secs },
    ];
    report.notes.extend(notes);
    Ok(report)
}

/// One profiling pass. With `log`, ncu wrote its output (the raw CSV, and
/// its errors) to that file, which is returned; otherwise the output is empty.
async fn ncu_pass(
    req: &LiveProfile,
    mut args: Vec<String>,
    log: Option<&Path>,
    cancel: &CancellationToken,
) -> Result<String, String> {
    if let Some(n) = req.launch_count {
        args.extend(["--launch-count".to_string(), n.to_string()]);
    }
    args.extend(req.target.iter().cloned());
    let mut cmd = ToolCommand::new(&req.ncu, req.timeout).args(args);
    if let Some(input) = &req.stdin {
        cmd = cmd.stdin(input.clone());
    }
    let out = run_tool(&cmd, cancel).await.map_err(|e| tool_error(&e))?;
    let logged = log.map(|p| std::fs::read_to_string(p).unwrap_or_default()).unwrap_or_default();
    let all = format!("{}{}{logged}", out.stdout, out.stderr);
    if !out.success() || all.contains("ERR_NVGPUCTRPERM") || all.contains("No kernels were profiled") {
        return Err(explain_ncu_failure(&all));
    }
    Ok(logged)
}

async fn export(
    req: &LiveProfile,
    report: &str,
    page: Page,
    kernel: Option<&str>,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let cmd =
        ToolCommand::new(&req.ncu, req.timeout).args(ncu_args::export_args(&format!("{report}.ncu-rep"), page, kernel));
    let out = run_tool(&cmd, cancel).await.map_err(|e| tool_error(&e))?;
    if !out.success() {
        return Err(explain_ncu_failure(&format!("{}{}", out.stdout, out.stderr)));
    }
    Ok(out.stdout)
}

fn tool_error(e: &ToolError) -> String {
    match e {
        ToolError::NotFound { .. } => format!("{e}. {}", kernelpro_toolchain::toolchain::NCU_INSTALL_HINT),
        _ => e.to_string(),
    }
}

/// A finding that says profiling is unavailable, and why, on the file's first line.
pub fn unavailable(reason: &str) -> Finding {
    Finding::new("ncu", Severity::Information, Span::line(0), format!("profiling unavailable: {reason}"))
        .with_code("profile-unavailable")
}

/// What to profile in a file, and how.
#[derive(Clone)]
pub struct FileProfileRequest {
    pub path: PathBuf,
    pub text: String,
    /// Only this kernel; `None`: every kernel with a launch spec (or the whole program).
    pub kernel: Option<String>,
    pub full: bool,
    /// The `kernelpro` executable that serves as the GPU worker.
    pub exe: PathBuf,
    /// Keep the exported ncu pages here (one folder per kernel in harness mode).
    pub save_exports: Option<PathBuf>,
    /// Whether the file compiled, when that is not known yet (a profile begun
    /// at a save, beside the compile): nothing is compiled or measured until
    /// it says yes, but the in-process runs start and open the device
    /// meanwhile; a no ends the profile with [`NOT_COMPILED`].
    pub ready: Option<Ready>,
    /// The program's last profile (profile-on-save): its unchanged kernels
    /// keep their findings and only the others are measured ([`crate::reuse`]).
    pub last: Option<std::sync::Arc<crate::reuse::LastProfile>>,
}

/// The answer to "did the file compile?" a profile begun beside the compile waits for.
pub type Ready = futures::future::Shared<futures::future::BoxFuture<'static, bool>>;

/// A profile begun beside a compile that failed (or was superseded) ends with this.
pub const NOT_COMPILED: &str = "the file did not compile, so it was not profiled";

/// What the in-process runs read: a program reads nothing; the harness worker
/// reads its job, given now or once the file has compiled.
pub enum JobInput {
    Program,
    Job { stdin: Vec<u8>, modules: Vec<PathBuf> },
    Later(crate::cupti::LateJob),
}

impl std::fmt::Debug for FileProfileRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileProfileRequest")
            .field("path", &self.path)
            .field("kernel", &self.kernel)
            .field("full", &self.full)
            .field("ready", &self.ready.is_some())
            .finish_non_exhaustive()
    }
}

/// Profiles a file: each kernel with a launch spec through the harness, or,
/// when the file has its own `main()` and no spec, the whole program.
#[tracing::instrument(
    level = "debug",
    name = "profile",
    skip_all,
    err(level = tracing::Level::DEBUG),
    fields(file = %req.path.display(), kernel = req.kernel.as_deref())
)]
pub async fn profile_file(
    req: &FileProfileRequest,
    settings: &kernelpro_config::settings::Settings,
    analyzer: &kernelpro_core::analysis::Analyzer,
    cancel: &CancellationToken,
) -> Result<ProfileReport, String> {
    let env = kernelpro_toolchain::toolchain::Env::for_settings(settings);
    let ncu_found = kernelpro_toolchain::toolchain::find_tool("ncu", settings.ncu.as_deref(), "KERNELPRO_NCU", &env);
    let backend = Backend::from_setting(&settings.profile_backend);
    let mut fallback_notes = Vec::new();
    let mut why_not_in_process = None;
    // The in-process profiler, unless ncu is asked for (`--full`, the
    // setting, exports to keep for `--import`); where it is missing, ncu.
    let mut stages = Vec::new();
    let in_process = if req.full || req.save_exports.is_some() || backend == Backend::Ncu {
        None
    } else {
        let t = Instant::now();
        let ip = in_process_setup(settings, ncu_found.as_ref().map(|f| f.path.as_path()), cancel).await;
        stages.push(Stage::new("in-process profiler: find or build the library".into(), t.elapsed()));
        match ip {
            Ok(ip) => Some(ip),
            Err(e) if backend == Backend::Cupti => return Err(e.to_string()),
            Err(e) => {
                fallback_notes.push(fallback_note(&e));
                why_not_in_process = Some(e.to_string());
                None
            }
        }
    };
    let have_ncu = ncu_found.is_some();
    // The in-process profile failed: ncu measures, where there is one.
    let no_ncu = |e: &crate::cupti::CuptiError| {
        format!("the in-process profile failed ({e}) and ncu, the fallback, was not found")
    };
    let ncu = match (ncu_found, &in_process) {
        (Some(f), _) => f.path,
        // Only needed if the in-process run fails: said then.
        (None, Some(_)) => PathBuf::from("ncu"),
        (None, None) => {
            let why = why_not_in_process.map(|e| format!(", nor the in-process profiler ({e})")).unwrap_or_default();
            return Err(format!(
                "ncu was not found{why}. {}",
                kernelpro_toolchain::toolchain::ncu_install_hint(settings.words)
            ));
        }
    };
    let clock_control = if settings.clock_control == "base" { ClockControl::Base } else { ClockControl::None };
    let timeout = Duration::from_secs(settings.profile_timeout_secs.max(1));
    let thresholds = Thresholds::default();
    let base = kernelpro_core::analysis::FileAnalysis::without_tools(&req.path, &req.text, settings);
    let mut kernels: Vec<String> = match &req.kernel {
        Some(k) => vec![k.clone()],
        None => base.launch_specs.keys().cloned().collect(),
    };
    kernels.sort();
    // Only the harness's in-process runs start before the compile is known to have
    // succeeded (its analysis then has the cubin): everything else waits for it here.
    let early = match (&req.ready, &in_process) {
        (Some(ready), Some(_)) => Some(ready.clone()),
        (Some(ready), _) => {
            if !ready.clone().await {
                return Err(NOT_COMPILED.into());
            }
            None
        }
        (None, _) => None,
    };
    if kernels.is_empty() {
        if !base.source.has_main {
            return Err("nothing to profile: add a launch spec (`// kernelpro:` lines) above a kernel, or give the file a main() that launches its kernels".into());
        }
        let dir = tempfile::Builder::new().prefix("kernelpro-prog-").tempdir().map_err(|e| e.to_string())?;
        // The file's program as written: for ncu (it replays each kernel itself), and in-process
        // where no launch could be doubled or the doubled copy does not build.
        let mut as_written = None;
        if let Some(ip) = &in_process {
            let key = crate::reuse::key(&req.path, &req.text, &build_key(&req.path, settings), "cupti");
            let reuse = req.last.as_deref().and_then(|last| crate::reuse::plan(last, &req.text, &key));
            // In-process, a copy whose host launches run twice: CUPTI gives a kernel's
            // per-instruction counters only on its second launch in a process (the H100).
            // Begun beside the save's compile, it builds meanwhile (the copy's own nvcc).
            let build = async {
                let (twice, doubled) = kernelpro_source::launch::launched_twice(&req.text);
                let t = Instant::now();
                let copy = dir.path().join("twice");
                if doubled == 0 || reuse.as_ref().is_some_and(|r| r.fresh.is_empty()) {
                    return (None, t.elapsed());
                }
                let built = match std::fs::create_dir_all(&copy) {
                    Ok(()) => build_program(&req.path, &twice, settings, &copy, cancel).await.ok(),
                    Err(_) => None,
                };
                (built, t.elapsed())
            };
            let compiled = async {
                match early.clone() {
                    Some(ready) => ready.await,
                    None => true,
                }
            };
            let ((built, took), compiled) = futures::join!(build, compiled);
            if !compiled {
                return Err(NOT_COMPILED.into());
            }
            if let Some(reuse) = &reuse
                && reuse.fresh.is_empty()
            {
                return Ok(kept_report(reuse, key, stages));
            }
            let (exe, launches_twice) = match built {
                Some(built) => {
                    stages.push(Stage::new(
                        format!("compile the program (its launches twice){}", kept_host(&built)),
                        took,
                    ));
                    (built.exe, true)
                }
                None => {
                    let t = Instant::now();
                    let built = build_program(&req.path, &req.text, settings, dir.path(), cancel).await?;
                    stages.push(Stage::new(format!("compile the program{}", kept_host(&built)), t.elapsed()));
                    as_written = Some(built.exe.clone());
                    (built.exe, false)
                }
            };
            let target = vec![exe.display().to_string()];
            let only = reuse.as_ref().map(|r| r.fresh.clone()).unwrap_or_default();
            let got = profile_in_process(
                ip,
                target,
                JobInput::Program,
                None,
                &only,
                launches_twice,
                &req.text,
                &thresholds,
                timeout,
                cancel,
            )
            .await;
            match (got, &reuse) {
                (Ok(mut r), _) => {
                    stages.append(&mut r.stages);
                    r.stages = stages;
                    if let Some(reuse) = &reuse {
                        r.notes.push(kept_note(reuse));
                        r.kernels.extend(reuse.kept.iter().cloned());
                        r.kept = reuse.kept.iter().map(|k| k.kernel.clone()).collect();
                        order_as_in(&mut r.kernels, &req.text);
                    }
                    r.reuse_key = Some(key);
                    return Ok(r);
                }
                // The changed kernels did not run (no longer launched): the kept ones are the profile.
                (Err(crate::cupti::CuptiError::NoKernel(_)), Some(reuse)) => {
                    return Ok(kept_report(reuse, key, stages));
                }
                (Err(e), _) if backend == Backend::Cupti => return Err(e.to_string()),
                (Err(e), _) if !have_ncu => return Err(no_ncu(&e)),
                (Err(e), _) => fallback_notes.push(format!("profiled with ncu: the in-process profile failed: {e}")),
            }
        }
        let exe = match as_written {
            Some(exe) => exe,
            None => {
                let t = Instant::now();
                let built = build_program(&req.path, &req.text, settings, dir.path(), cancel).await?;
                stages.push(Stage::new(format!("compile the program{}", kept_host(&built)), t.elapsed()));
                built.exe
            }
        };
        let live = LiveProfile {
            ncu: ncu.clone(),
            target: vec![exe.display().to_string()],
            stdin: None,
            clock_control,
            kernel_regex: None,
            timeout,
            full: req.full,
            launch_count: None,
            save_exports: req.save_exports.clone(),
        };
        let mut report = profile_live(&live, &req.text, &thresholds, cancel).await?;
        stages.append(&mut report.stages);
        report.stages = stages;
        report.notes.extend(fallback_notes);
        return Ok(report);
    }
    let mut report = ProfileReport::default();
    let mut early = early;
    for k in kernels {
        let src =
            crate::harness::KernelSource { path: req.path.clone(), text: req.text.clone(), kernel: Some(k.clone()) };
        // The job the worker runs under the profiler: as many launches as the first injected run's plan uses.
        let profiled_job = |prepared: &crate::harness::Prepared| {
            let job = kernelpro_gpu::Job { runs: crate::cupti::plan_launches(Some(&k)), ..profile_job(prepared) };
            // The worker loads the job's cubin as it is: disassembled during the run.
            let modules = match &prepared.job.image {
                kernelpro_gpu::Image::Cubin(cubin) => vec![cubin.clone()],
                kernelpro_gpu::Image::Ptx(_) => vec![],
            };
            (serde_json::to_vec(&job).expect("job serializes"), modules)
        };
        let target = vec![req.exe.display().to_string(), kernelpro_gpu::WORKER_SUBCOMMAND.to_string()];
        let (kernel, text, limits) = (Some(k.as_str()), &req.text, &thresholds);
        // The worker under the in-process profiler, reading `input`, stopped by `token`.
        let in_process_runs = |ip, input, token: CancellationToken| {
            let target = target.clone();
            async move { profile_in_process(ip, target, input, kernel, &[], false, text, limits, timeout, &token).await }
        };
        let t = Instant::now();
        let (prepared, in_process_got) = match (&in_process, early.take()) {
            // Begun beside the save's compile: the runs start (and open the device) now and
            // read their job once the compile has succeeded and the job is prepared from it.
            (Some(ip), Some(ready)) => {
                let (give, late) = crate::cupti::LateJob::channel(0);
                let stop = cancel.child_token();
                let prepare = async {
                    let prepared = match ready.await {
                        true => crate::harness::prepare_with(&src, settings, analyzer, cancel, false).await,
                        false => Err(NOT_COMPILED.to_string()),
                    };
                    match &prepared {
                        Ok(p) => {
                            let (stdin, modules) = profiled_job(p);
                            give.give(stdin, modules);
                        }
                        // The runs read end of input and are stopped.
                        Err(_) => stop.cancel(),
                    }
                    (prepared, t.elapsed())
                };
                let runs = in_process_runs(ip, JobInput::Later(late), stop.clone());
                let ((prepared, took), got) = futures::join!(prepare, runs);
                let prepared = prepared?;
                stages.push(Stage::new(format!("{k}: compile the harness job (while the runs start)"), took));
                (prepared, Some(got))
            }
            (ip, _) => {
                // The compile step alone: the job needs the cubin, not the SASS
                // tools' findings (after a save's compile, the analyzer's cache has it).
                let prepared = crate::harness::prepare_with(&src, settings, analyzer, cancel, false).await?;
                stages.push(Stage::new(format!("{k}: compile the harness job"), t.elapsed()));
                let got = match ip {
                    Some(ip) => {
                        let (stdin, modules) = profiled_job(&prepared);
                        Some(in_process_runs(ip, JobInput::Job { stdin, modules }, cancel.clone()).await)
                    }
                    None => None,
                };
                (prepared, got)
            }
        };
        match in_process_got {
            Some(Ok(one)) => {
                take_kernels(&mut report, &mut stages, one, &k);
                continue;
            }
            Some(Err(e)) if backend == Backend::Cupti => return Err(e.to_string()),
            Some(Err(e)) if !have_ncu => return Err(no_ncu(&e)),
            Some(Err(e)) => fallback_notes.push(format!("{k} profiled with ncu: the in-process profile failed: {e}")),
            None => {}
        }
        let job = profile_job(&prepared);
        let live = LiveProfile {
            ncu: ncu.clone(),
            target: vec![req.exe.display().to_string(), kernelpro_gpu::WORKER_SUBCOMMAND.to_string()],
            stdin: Some(serde_json::to_vec(&job).expect("job serializes")),
            clock_control,
            // ncu matches the demangled function name (its default --kernel-name-base).
            kernel_regex: Some(format!("^{}$", k.replace(|c: char| !c.is_alphanumeric() && c != '_', "."))),
            timeout,
            full: req.full,
            launch_count: Some(1),
            save_exports: req.save_exports.as_ref().map(|d| d.join(&k)),
        };
        let one = profile_live(&live, &req.text, &thresholds, cancel).await?;
        take_kernels(&mut report, &mut stages, one, &k);
    }
    report.notes.extend(fallback_notes);
    report.stages = stages;
    Ok(report)
}

/// Kernel `k`'s profile (in-process or ncu's) into the file's report, its stages named after it.
fn take_kernels(report: &mut ProfileReport, stages: &mut Vec<Stage>, one: ProfileReport, k: &str) {
    report.backend = one.backend;
    report.pass_secs += one.pass_secs;
    report.export_secs += one.export_secs;
    stages.extend(one.stages.into_iter().map(|s| Stage { name: format!("{k}: {}", s.name), ..s }));
    report.notes.extend(one.notes);
    report.kernels.extend(one.kernels);
}

/// One launch of the prepared kernel, no reference, no timing: what a profile runs.
fn profile_job(prepared: &crate::harness::Prepared) -> kernelpro_gpu::Job {
    kernelpro_gpu::Job {
        device: 0,
        kernel: prepared.job.clone(),
        reference: None,
        warmup: 0,
        runs: 1,
        flush_l2: false,
        energy_window_ms: 0,
        ..kernelpro_gpu::Job::new(prepared.job.clone())
    }
}

/// The note a profile carries when the in-process profiler is unavailable
/// and ncu measured instead.
pub fn fallback_note(e: &crate::cupti::CuptiError) -> String {
    format!("profiled with ncu: {e}")
}

/// Which profiler `kernelpro profile` and profile-on-save use (the
/// `profileBackend` setting); `--full` is always ncu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// In-process (CUPTI) where it builds and runs, else ncu with a note.
    Auto,
    /// In-process only: its failure is the profile's.
    Cupti,
    Ncu,
}

impl Backend {
    pub fn from_setting(s: &str) -> Backend {
        match s {
            "cupti" => Backend::Cupti,
            "ncu" => Backend::Ncu,
            _ => Backend::Auto,
        }
    }
}

/// The in-process profiler, ready: its library built, nvdisasm found.
#[derive(Debug, Clone)]
pub struct InProcess {
    pub library: PathBuf,
    pub nvdisasm: PathBuf,
}

/// Finds CUPTI next to nvcc or ncu and builds (or finds cached) the library.
pub async fn in_process_setup(
    settings: &kernelpro_config::settings::Settings,
    ncu: Option<&Path>,
    cancel: &CancellationToken,
) -> Result<InProcess, crate::cupti::CuptiError> {
    use crate::cupti::{self, CuptiError};
    let env = kernelpro_toolchain::toolchain::Env::for_settings(settings);
    let nvcc = kernelpro_core::analysis::Analyzer::find_nvcc(settings)
        .ok_or_else(|| CuptiError::Build("nvcc was not found".into()))?;
    let nvdisasm = kernelpro_toolchain::toolchain::find_sibling(&nvcc, "nvdisasm", &env)
        .ok_or_else(|| CuptiError::Build("nvdisasm was not found".into()))?;
    let mut tools: Vec<&Path> = vec![nvcc.path.as_path()];
    tools.extend(ncu);
    let paths = cupti::find_cupti(&cupti::roots_of(&tools)).ok_or(CuptiError::NotFound)?;
    let timeout = Duration::from_secs(settings.compile_timeout_secs.max(1));
    let library = cupti::build_library(&nvcc.path, &paths, &kernelpro_config::cache_dir(), timeout, cancel).await?;
    Ok(InProcess { library, nvdisasm: nvdisasm.path })
}

/// One in-process profile of a program (or the worker with its job),
/// analyzed like ncu's pages.
#[allow(clippy::too_many_arguments)]
pub async fn profile_in_process(
    ip: &InProcess,
    target: Vec<String>,
    input: JobInput,
    kernel: Option<&str>,
    only: &[String],
    launches_twice: bool,
    file_text: &str,
    thresholds: &Thresholds,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<ProfileReport, crate::cupti::CuptiError> {
    let (stdin, modules, later) = match input {
        JobInput::Program => (None, Vec::new(), None),
        JobInput::Job { stdin, modules } => (Some(stdin), modules, None),
        JobInput::Later(late) => (None, Vec::new(), Some(late)),
    };
    let req = crate::cupti::CuptiProfile {
        library: ip.library.clone(),
        nvdisasm: ip.nvdisasm.clone(),
        target,
        stdin,
        timeout,
        kernel: kernel.map(str::to_string),
        only: only.to_vec(),
        modules,
        launches_twice,
        later,
    };
    let got = crate::cupti::profile(&req, file_text, cancel).await?;
    // Findings belong on the lines that cause them: with no kernel's per-line
    // counters (an H100 in program mode, 2026-12-07: the SASS pass gave no
    // records) every finding would land on its kernel's first line, so the
    // caller measures with ncu instead (auto) or says why (cupti).
    if got.pages.is_empty() && !got.profiles.is_empty() {
        return Err(crate::cupti::CuptiError::NoLines(got.notes.join("; ")));
    }
    let mut report = analyze_profiles(&got.profiles, &[], &got.pages, got.notes, file_text, thresholds);
    report.backend = "cupti".into();
    report.pass_secs = got.run_secs;
    report.export_secs = got.disasm_secs;
    report.stages = got.stages;
    Ok(report)
}

/// What a program's build depends on besides its text: the arch and the flags.
fn build_key(path: &Path, settings: &kernelpro_config::settings::Settings) -> String {
    format!("{} {:?}", settings.arch, kernelpro_core::analysis::Analyzer::flags_for(path, settings))
}

/// A program's profile where no kernel changed since the last one: its kernels as they were.
fn kept_report(reuse: &crate::reuse::Reuse, key: String, mut stages: Vec<Stage>) -> ProfileReport {
    stages.push(Stage::new("nothing measured: no kernel changed".into(), Duration::ZERO));
    ProfileReport {
        kernels: reuse.kept.clone(),
        kept: reuse.kept.iter().map(|k| k.kernel.clone()).collect(),
        notes: vec![kept_note(reuse)],
        backend: "cupti".into(),
        stages,
        reuse_key: Some(key),
        ..Default::default()
    }
}

fn kept_note(reuse: &crate::reuse::Reuse) -> String {
    let names: Vec<&str> = reuse.kept.iter().map(|k| k.kernel.as_str()).collect();
    format!("kept from the last profile, unchanged since: {}", names.join(", "))
}

/// Kernels in the order the text defines them.
fn order_as_in(kernels: &mut [KernelReport], text: &str) {
    let file = kernelpro_source::parse(text);
    let at = |name: &str| file.kernels().position(|k| k.name == name).unwrap_or(usize::MAX);
    kernels.sort_by_key(|k| at(&k.kernel));
}

/// Compiles the file's own program (for files with a `main()`).
async fn build_program(
    path: &Path,
    text: &str,
    settings: &kernelpro_config::settings::Settings,
    dir: &Path,
    cancel: &CancellationToken,
) -> Result<crate::program::Built, String> {
    crate::program::build(path, text, settings, dir, &kernelpro_config::cache_dir(), cancel).await
}

/// A build stage's note where only the device code was compiled.
fn kept_host(built: &crate::program::Built) -> &'static str {
    if built.host_kept { " (device code only: host part kept)" } else { "" }
}

/// A kernel got slower than its last profile: a warning on its name.
pub fn slower_finding(text: &str, kernel: &str, what: &str) -> Finding {
    let span = kernelpro_source::parse(text).kernel(kernel).map(|k| k.name_span).unwrap_or_else(|| Span::line(0));
    Finding::new("ncu", Severity::Warning, span, format!("slower than the last profile: {what}"))
        .with_code("Regression")
        .with_kernel(kernel)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The five-kernel program's copy for the in-process profile: every host
    /// launch doubled, on the file's own lines, and it builds with the real nvcc.
    #[test]
    fn the_programs_copy_with_launches_twice_builds() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/h200-probe/kernels.cu");
        let text = std::fs::read_to_string(&path).unwrap();
        let (twice, doubled) = kernelpro_source::launch::launched_twice(&text);
        assert_eq!(doubled, kernelpro_source::parse(&text).kernels().count(), "{twice}");
        assert_eq!(twice.lines().count(), text.lines().count());
        let dir = tempfile::tempdir().unwrap();
        let settings = kernelpro_config::settings::Settings::default();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let built = rt.block_on(build_program(&path, &twice, &settings, dir.path(), &CancellationToken::new()));
        assert!(built.as_ref().is_ok_and(|b| b.exe.exists()), "{built:?}");
    }
}
