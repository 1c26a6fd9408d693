//! The in-process profiler backend (issue 33): the injection library
//! (`cupti/kp_cupti.cpp`, embedded here) is built on first use with the
//! toolchain's nvcc against CUPTI's headers and libraries, cached by content
//! hash under the user's cache dir, and loaded into the profiled program
//! through `CUDA_INJECTION64_PATH`. It reads the counters one ncu launch
//! would (range profiler, one replayed launch) and the per-instruction ones
//! of the source page (SASS metrics, on the kernel's next launch); its output
//! becomes the same `KernelProfile`s and `SourcePage`s as ncu's pages
//! (`kernelpro_profile::cupti`), so the analysis is one code path.

use crate::profiling::Stage;
use kernelpro_profile::cupti::{self as pages, CuptiRun, Instruction, RANGE_METRICS};
use kernelpro_profile::{KernelProfile, SourcePage};
use kernelpro_runner::process::{ToolCommand, run_tool};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The library's source, built on the machine that profiles.
pub const SOURCE: &str = include_str!("cupti/kp_cupti.cpp");
/// Its on-disk cache of the range profiler's configuration (no CUPTI in it:
/// the tests build it alone), inlined where the library includes it.
pub const CONFIG_CACHE: &str = include_str!("cupti/config_cache.h");

/// The library's whole source, the cache's header inlined.
pub fn library_source() -> String {
    SOURCE.replacen("#include \"config_cache.h\"", &CONFIG_CACHE.replacen("#pragma once\n", "", 1), 1)
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CuptiError {
    #[error(
        "CUPTI was not found (looked for cupti_range_profiler.h and libcupti next to nvcc and ncu: extras/CUPTI, targets/x86_64-linux, the PyPI nvidia cupti package; or set KERNELPRO_CUPTI to its folder)"
    )]
    NotFound,
    #[error("the CUPTI profiler library does not build: {0}")]
    Build(String),
    #[error("the program under CUPTI failed: {0}")]
    Run(String),
    #[error("CUPTI could not profile: {0}")]
    Profiler(String),
    #[error("CUPTI profiled no kernel{0}")]
    NoKernel(String),
    #[error("CUPTI gave no per-line counters for any kernel ({0})")]
    NoLines(String),
}

/// CUPTI's errors, with what to do where another process holds the GPU's profiler.
fn busy_hint(errors: String) -> String {
    if errors.contains("HARDWARE_BUSY") {
        format!(
            "{errors} (another process is profiling this GPU: Nsight Compute, DCGM, or a profile still running; profile again when it has ended)"
        )
    } else {
        errors
    }
}

/// Where CUPTI's headers and library are, and the CUDA headers (`cuda.h`).
#[derive(Debug, Clone, PartialEq)]
pub struct CuptiPaths {
    pub include: PathBuf,
    pub lib: PathBuf,
    pub cuda_include: PathBuf,
    /// Driver stubs to link against where no driver is installed.
    pub stubs: Option<PathBuf>,
}

fn has_lib(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("libcupti.so")))
        .unwrap_or(false)
}

/// CUPTI beside a CUDA root (the folder above nvcc's or ncu's `bin`), in a
/// PyPI `nvidia/cu13` tree, or in `$KERNELPRO_CUPTI`.
pub fn find_cupti(roots: &[PathBuf]) -> Option<CuptiPaths> {
    let mut all: Vec<PathBuf> = std::env::var_os("KERNELPRO_CUPTI").map(PathBuf::from).into_iter().collect();
    all.extend(roots.iter().cloned());
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        all.extend(std::env::var_os(var).map(PathBuf::from));
    }
    all.push(PathBuf::from("/usr/local/cuda"));
    find_cupti_in(&all)
}

/// CUPTI under these roots only.
pub fn find_cupti_in(all: &[PathBuf]) -> Option<CuptiPaths> {
    let mut candidates: Vec<(PathBuf, PathBuf, PathBuf)> = Vec::new();
    for root in all {
        for (inc, libs) in [
            ("extras/CUPTI/include", &["extras/CUPTI/lib64", "extras/CUPTI/lib"][..]),
            ("targets/x86_64-linux/include", &["targets/x86_64-linux/lib", "lib64"][..]),
            ("include", &["lib64", "lib"][..]),
        ] {
            for lib in libs {
                candidates.push((root.clone(), root.join(inc), root.join(lib)));
            }
        }
        // A pip-installed toolchain: site-packages/nvidia/cu13/{bin,include,lib}.
        if root.ends_with("bin") {
            let up = root.parent().unwrap_or(root).to_path_buf();
            candidates.push((up.clone(), up.join("include"), up.join("lib")));
        }
    }
    candidates.into_iter().find_map(|(root, include, lib)| {
        if !include.join("cupti_range_profiler.h").exists() || !has_lib(&lib) {
            return None;
        }
        let cuda_include = [include.clone(), root.join("include"), root.join("targets/x86_64-linux/include")]
            .into_iter()
            .find(|d| d.join("cuda.h").exists())?;
        let stubs = [root.join("lib64/stubs"), root.join("targets/x86_64-linux/lib/stubs"), lib.join("stubs")]
            .into_iter()
            .find(|d| d.join("libcuda.so").exists());
        Some(CuptiPaths { include, lib, cuda_include, stubs })
    })
}

/// The CUDA roots of the tools already found: the folders above their `bin`.
pub fn roots_of(tools: &[&Path]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for t in tools {
        let real = std::fs::canonicalize(t).unwrap_or_else(|_| t.to_path_buf());
        for p in [t.to_path_buf(), real] {
            if let Some(bin) = p.parent() {
                out.push(bin.to_path_buf());
                if let Some(root) = bin.parent() {
                    out.push(root.to_path_buf());
                }
            }
        }
    }
    out.dedup();
    out
}

/// Builds the library (or finds it built), cached under `cache` by the hash
/// of its source and of where CUPTI is.
pub async fn build_library(
    nvcc: &Path,
    cupti: &CuptiPaths,
    cache: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<PathBuf, CuptiError> {
    let source = library_source();
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    h.update(format!("{cupti:?}{}", nvcc.display()).as_bytes());
    let hash: String = h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    let dir = cache.join("cupti");
    let lib = dir.join(format!("libkp_cupti-{hash}.so"));
    if lib.exists() {
        return Ok(lib);
    }
    std::fs::create_dir_all(&dir).map_err(|e| CuptiError::Build(format!("{}: {e}", dir.display())))?;
    let src = dir.join(format!("kp_cupti-{hash}.cpp"));
    std::fs::write(&src, &source).map_err(|e| CuptiError::Build(e.to_string()))?;
    let tmp = dir.join(format!("libkp_cupti-{hash}.{}.tmp.so", std::process::id()));
    let mut args: Vec<String> = vec![
        "-shared".into(),
        "-Xcompiler".into(),
        "-fPIC".into(),
        "-std=c++17".into(),
        "-O2".into(),
        format!("-I{}", cupti.include.display()),
        format!("-I{}", cupti.cuda_include.display()),
        src.display().to_string(),
        "-o".into(),
        tmp.display().to_string(),
        format!("-L{}", cupti.lib.display()),
        "-lcupti".into(),
        format!("-Xlinker=-rpath={}", cupti.lib.display()),
    ];
    // The driver's libcuda.so (the toolkit's stub to link against), else the
    // driver's own libcuda.so.1.
    match &cupti.stubs {
        Some(stubs) => args.extend([format!("-L{}", stubs.display()), "-lcuda".into()]),
        None => args.push("-l:libcuda.so.1".into()),
    }
    let out = run_tool(&ToolCommand::new(nvcc, timeout).args(args), cancel)
        .await
        .map_err(|e| CuptiError::Build(e.to_string()))?;
    if !out.success() {
        let _ = std::fs::remove_file(&tmp);
        let tail: Vec<&str> = out.stderr.lines().filter(|l| !l.trim().is_empty()).take(4).collect();
        return Err(CuptiError::Build(tail.join(" | ")));
    }
    std::fs::rename(&tmp, &lib).map_err(|e| CuptiError::Build(e.to_string()))?;
    Ok(lib)
}

/// One in-process profile.
#[derive(Debug, Clone)]
pub struct CuptiProfile {
    pub library: PathBuf,
    pub nvdisasm: PathBuf,
    /// The program and its arguments (the harness worker, or the file's own program).
    pub target: Vec<String>,
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    /// Keep only kernels whose base name matches.
    pub kernel: Option<String>,
    /// A program's kernels to profile, by base name (those that changed since
    /// its last profile); empty: every kernel. The others run unprofiled.
    pub only: Vec<String>,
    /// Modules known before the run (the harness job's cubin, which the
    /// worker loads as it is): disassembled during the first run, so the
    /// modules the run saves need not be where these hold every profiled kernel.
    pub modules: Vec<PathBuf>,
    /// The target is a program whose host launches run twice
    /// (`source::launch::launched_twice`): each kernel's second launch gets the
    /// SASS pass, and an exit status its own checks give is no failure.
    pub launches_twice: bool,
    /// The job and its modules when they are not ready at the start (a
    /// profile begun while the file still compiles): the runs start at once,
    /// open the device meanwhile, and read the job once given. `stdin` and
    /// `modules` are then unused.
    pub later: Option<LateJob>,
}

/// The receiving side of a job given after the runs start ([`CuptiProfile::later`]).
#[derive(Debug, Clone)]
pub struct LateJob {
    pub stdin: kernelpro_runner::LateInput,
    pub modules: tokio::sync::watch::Receiver<Option<Vec<PathBuf>>>,
    /// The device the job names, opened before the job arrives.
    pub device: u32,
}

/// The giving side of a [`LateJob`].
pub struct GiveJob {
    stdin: tokio::sync::watch::Sender<Option<std::sync::Arc<Vec<u8>>>>,
    modules: tokio::sync::watch::Sender<Option<Vec<PathBuf>>>,
}

impl LateJob {
    pub fn channel(device: u32) -> (GiveJob, LateJob) {
        let (stdin_tx, stdin) = tokio::sync::watch::channel(None);
        let (modules_tx, modules) = tokio::sync::watch::channel(None);
        (GiveJob { stdin: stdin_tx, modules: modules_tx }, LateJob { stdin, modules, device })
    }

    /// The modules once given; none once the giver is gone without them.
    async fn modules(&self) -> Vec<PathBuf> {
        kernelpro_runner::late_input(self.modules.clone()).await.unwrap_or_default()
    }
}

impl GiveJob {
    /// Gives the job (dropping a `GiveJob` unused gives the runs end of input instead).
    pub fn give(self, stdin: Vec<u8>, modules: Vec<PathBuf>) {
        let _ = self.modules.send(Some(modules));
        let _ = self.stdin.send(Some(std::sync::Arc::new(stdin)));
    }
}

/// What the injected runs gave: the kernels' profiles and source pages.
#[derive(Debug, Clone, Default)]
pub struct CuptiResult {
    pub profiles: Vec<KernelProfile>,
    pub pages: Vec<SourcePage>,
    pub notes: Vec<String>,
    /// The injected runs of the program.
    pub run_secs: f64,
    /// Disassembling the loaded modules (during the later runs) and building
    /// the source pages.
    pub disasm_secs: f64,
    /// Each step's seconds: the injected runs, the library's own steps
    /// within them, the disassembly, the source pages.
    pub stages: Vec<Stage>,
}

/// Where the library keeps its range-profiler configurations: beside it.
fn config_cache_dir(library: &Path) -> Option<PathBuf> {
    let dir = library.parent()?.join("config");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// How a run beside the first takes turns with it on the profiler (the
/// library's `KP_CUPTI_DONE` / `KP_CUPTI_WAIT_FOR`): the first releases the
/// profiler after its plan and creates the file; the other starts sampling
/// only once the file exists. The file is also created when the first run
/// ends, however it ends, so the other never waits past it.
#[derive(Debug, Clone, Default)]
enum Turn {
    #[default]
    Own,
    Signals(PathBuf),
    WaitsFor(PathBuf),
}

async fn injected_run(
    req: &CuptiProfile,
    dir: &Path,
    plan: &str,
    turn: &Turn,
    cancel: &CancellationToken,
) -> Result<CuptiRun, CuptiError> {
    // A file of its own for each run (the library appends).
    let plan_name = plan.replace(',', "-");
    let name = (0..).map(|i| format!("{plan_name}-{i}")).find(|n| !dir.join(format!("{n}.tsv")).exists()).unwrap();
    let out_file = dir.join(format!("{name}.tsv"));
    let cubins = dir.join(format!("{name}-modules"));
    std::fs::create_dir_all(&cubins).map_err(|e| CuptiError::Run(e.to_string()))?;
    let (program, args) = req.target.split_first().ok_or_else(|| CuptiError::Run("no program".into()))?;
    let mut cmd = ToolCommand::new(program, req.timeout)
        .args(args)
        .env("CUDA_INJECTION64_PATH", &req.library.display().to_string())
        .env("KP_CUPTI_OUT", &out_file.display().to_string())
        .env("KP_CUPTI_DIR", &cubins.display().to_string())
        .env("KP_CUPTI_PLAN", plan)
        .env("KP_CUPTI_METRICS", &RANGE_METRICS.join(","))
        .env("KP_CUPTI_SASS", &pages::sass_metric_names());
    // The range profiler's configuration, kept beside the library for the
    // next process (a folder the library writes into; absent: none kept).
    if let Some(cache) = config_cache_dir(&req.library) {
        cmd = cmd.env("KP_CUPTI_CACHE", &cache.display().to_string());
    }
    match turn {
        Turn::Own => {}
        Turn::Signals(done) => cmd = cmd.env("KP_CUPTI_DONE", &done.display().to_string()),
        Turn::WaitsFor(done) => cmd = cmd.env("KP_CUPTI_WAIT_FOR", &done.display().to_string()),
    }
    if let Some(k) = &req.kernel {
        cmd = cmd.env("KP_CUPTI_KERNEL", k);
    } else if !req.only.is_empty() {
        cmd = cmd.env("KP_CUPTI_KERNEL", &req.only.join(","));
    }
    if let Some(late) = &req.later {
        cmd = cmd.stdin_later(late.stdin.clone()).env(kernelpro_gpu::EARLY_DEVICE_ENV, &late.device.to_string());
    } else if let Some(input) = &req.stdin {
        cmd = cmd.stdin(input.clone());
    }
    let out = run_tool(&cmd, cancel).await.map_err(|e| CuptiError::Run(e.to_string()))?;
    let text = std::fs::read_to_string(&out_file).unwrap_or_default();
    // A copy of the library's records for a bug report (`#warn`s, timings).
    if let Some(keep) = std::env::var_os("KERNELPRO_CUPTI_KEEP").filter(|k| !k.is_empty()) {
        let keep = PathBuf::from(keep);
        if std::fs::create_dir_all(&keep).is_ok() {
            let _ = std::fs::write(keep.join(format!("{}-{name}.tsv", std::process::id())), &text);
        }
    }
    let mut run = pages::parse_cupti(&text);
    if !run.errors.is_empty() {
        return Err(CuptiError::Profiler(busy_hint(run.errors.join("; "))));
    }
    // A program whose kernels ran twice may fail its own checks of their output.
    if !out.success() && req.launches_twice && !run.profiles.is_empty() {
        let code = out.code.map_or_else(|| "a signal".to_string(), |c| format!("status {c}"));
        run.warnings.push(format!(
            "the program's copy with every launch run twice exited with {code} (its own checks may fail when a kernel updates its inputs); its kernels' records are kept"
        ));
    } else if !out.success() {
        let all = format!("{}{}", out.stdout, out.stderr);
        let tail: Vec<&str> = all.lines().filter(|l| !l.trim().is_empty()).rev().take(4).collect();
        return Err(CuptiError::Run(tail.into_iter().rev().collect::<Vec<_>>().join(" | ")));
    }
    Ok(run)
}

/// The plan of the first injected run: what each launch of a kernel is for
/// (the library's `KP_CUPTI_PLAN`). The one place that decides how many
/// processes a profile takes, with `next_plans`:
/// - one profiled kernel (harness mode: the worker launches it
///   `plan_launches` times): range profile, SASS metrics, then PC sampling
///   on its 1st, 2nd and 3rd launch, all in one process. CUPTI does not let
///   the range profiler and PC sampling share a context, so the library
///   disables the range profiler before sampling; where the driver still
///   refuses, the library writes `#warn pc ...` and `next_plans` samples in a
///   process of its own, and from then on `first_round` starts that process
///   beside the first (`PcMemo`);
/// - a whole program: range profile and SASS metrics only, on the copy whose
///   host launches run twice (`CuptiProfile::launches_twice`: the first
///   launch range-profiled, the second patched). Its kernels' launches
///   interleave (A, A, B, B), and once PC sampling has the context no later
///   kernel can be range-profiled, so the samples come from a process of their
///   own; `next_plans` asks for whatever is missing.
pub fn first_plan(kernel: Option<&str>) -> &'static str {
    if kernel.is_some() { "range,sass,pc" } else { "range,sass" }
}

/// How many launches of the kernel the first plan uses (the harness
/// worker's runs).
pub fn plan_launches(kernel: Option<&str>) -> u32 {
    first_plan(kernel).split(',').count() as u32
}

/// The plans of the first round of injected runs, started at once. Where
/// this device is known to refuse PC sampling after the range profiler in
/// one process (`PcMemo`), the first run does not try it (0.3–0.6 s of
/// sampling nothing on the H100), and a harness kernel's samples come from a
/// `pc` process started beside the `range,sass` one instead of after it: the
/// processes time-slice the GPU, so the per-instruction counts and the stall
/// samples of the kernel's launches are its own either way, and the refusal
/// is not waited for. A program's samples need a process of their own
/// anyway: it starts beside the range profile too. Where two processes at once
/// failed (`PcMemo::apart`), the samples come from a `pc` run after the first
/// (`next_plans`); where nothing was refused, the first plan alone. A first
/// run that fails beside another runs again alone, with the first plan.
pub fn first_round(kernel: Option<&str>, pc_refused: bool, runs_beside: bool) -> Vec<&'static str> {
    match (kernel, first_plan(kernel).strip_suffix(",pc")) {
        (Some(_), Some(rest)) if pc_refused && runs_beside => vec![rest, "pc"],
        (Some(_), Some(rest)) if pc_refused => vec![rest],
        (None, _) if runs_beside => vec![first_plan(kernel), "pc"],
        _ => vec![first_plan(kernel)],
    }
}

/// Whether CUPTI refused PC sampling after the range profiler in one process,
/// remembered per device (chip and driver, as the library's `#setup` names
/// them) in a small file beside the library's cached configurations:
/// `last <tab> device` (the device of the latest run, the one the next run
/// most likely gets) and `refused <tab> device` lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PcMemo {
    pub last: Option<String>,
    pub refused: Vec<String>,
    /// `apart <tab> device`: where a run beside the first failed (the device
    /// may not let two processes profile at once): one process again.
    pub apart: Vec<String>,
}

impl PcMemo {
    /// The file beside the library (absent: nothing remembered).
    fn path(library: &Path) -> Option<PathBuf> {
        Some(library.parent()?.join("pc-sampling.tsv"))
    }

    pub fn read(library: &Path) -> PcMemo {
        let text = PcMemo::path(library).and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
        PcMemo::parse(&text)
    }

    pub fn parse(text: &str) -> PcMemo {
        let mut memo = PcMemo::default();
        for line in text.lines() {
            let (list, d) = match line.split_once('\t') {
                Some(("last", d)) => {
                    memo.last = Some(d.to_string());
                    continue;
                }
                Some(("refused", d)) => (&mut memo.refused, d),
                Some(("apart", d)) => (&mut memo.apart, d),
                _ => continue,
            };
            if !list.iter().any(|r| r == d) {
                list.push(d.to_string());
            }
        }
        memo
    }

    pub fn text(&self) -> String {
        let mut out: String = self.last.iter().map(|d| format!("last\t{d}\n")).collect();
        out.extend(self.refused.iter().map(|d| format!("refused\t{d}\n")));
        out.extend(self.apart.iter().map(|d| format!("apart\t{d}\n")));
        out
    }

    /// Whether the last run's device refused PC sampling after the range
    /// profiler in one process.
    pub fn refused_here(&self) -> bool {
        self.last.as_ref().is_some_and(|d| self.refused.contains(d))
    }

    /// Whether the next run may start processes beside the first: two at
    /// once never failed on the last run's device (or none is known).
    pub fn runs_beside(&self) -> bool {
        self.last.as_ref().is_none_or(|d| !self.apart.contains(d))
    }

    /// A run beside the first failed on `device`.
    pub fn keep_apart(&mut self, device: &str) {
        if !self.apart.iter().any(|d| d == device) {
            self.apart.push(device.to_string());
        }
    }

    /// What a run on `device` showed: `Some(true)` refused, `Some(false)`
    /// sampled after the range profiler (a newer driver may allow what an
    /// older one refused), `None` not tried (the samples came from a process
    /// of their own).
    pub fn observe(&mut self, device: &str, refused: Option<bool>) {
        self.last = Some(device.to_string());
        match refused {
            Some(true) if !self.refused.iter().any(|d| d == device) => self.refused.push(device.to_string()),
            Some(false) => self.refused.retain(|d| d != device),
            _ => {}
        }
    }

    /// Written whole through a temp file (another profile may read it meanwhile).
    pub fn write(&self, library: &Path) {
        let Some(path) = PcMemo::path(library) else { return };
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        if std::fs::write(&tmp, self.text()).is_ok() && std::fs::rename(&tmp, &path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// What the next round of injected runs must collect, from what the runs so
/// far gave these kernels (their mangled names); the plans of one round run
/// at once. A kernel without per-instruction counters was launched once (or
/// its SASS pass failed): a `sass,pc` run patches it, and a `pc` run beside it
/// samples it (samples of a patched launch would not be the kernel's own).
/// Per-instruction counts do not depend on what else the GPU runs, and
/// processes time-slice the GPU, so the two runs do not disturb each other's
/// numbers. Stall samples alone missing (PC sampling refused after the
/// range profiler, or a kernel launched twice): a `pc` run. Nothing
/// missing: no run.
pub fn next_plans(run: &CuptiRun, mangled: &[String]) -> Vec<&'static str> {
    let no_sass = mangled.iter().any(|m| !run.has_pcs(m));
    let no_pc = mangled.iter().any(|m| !run.has_stalls(m));
    match (no_sass, no_pc) {
        (true, true) => vec!["sass,pc", "pc"],
        (true, false) => vec!["sass"],
        (false, true) => vec!["pc"],
        (false, false) => vec![],
    }
}

/// Whether this run showed CUPTI refusing PC sampling after the range
/// profiler in its process (the library's `#warn pc`, or sampling that gave
/// no kernel a sample), or
/// allowing it (samples); `None` where it was not tried or did not tell.
pub fn pc_refused(plan: &str, run: &CuptiRun, mangled: &[String]) -> Option<bool> {
    let steps: Vec<&str> = plan.split(',').collect();
    if !steps.contains(&"pc") || steps.len() < 2 || mangled.is_empty() {
        return None;
    }
    if mangled.iter().all(|m| run.has_stalls(m)) {
        return Some(false);
    }
    // The H100 with driver 13.0 says nothing and samples nothing: sampling ran (a `#pc` record)
    // and no kernel has a sample. As good as a refusal.
    let sampled_nothing = run.step_ms.contains_key("pc") && mangled.iter().all(|m| !run.has_stalls(m));
    (sampled_nothing || run.warnings.iter().any(|w| w.starts_with("pc "))).then_some(true)
}

/// The saved modules that hold one of these functions (its name in the
/// cubin's string table): the harness worker's own modules are not
/// disassembled. None found: all of them.
fn modules_holding(cubins: &[String], mangled: &[String]) -> Vec<String> {
    let names: Vec<Vec<u8>> = mangled.iter().map(|m| format!("{m}\0").into_bytes()).collect();
    let some: Vec<String> = cubins.iter().filter(|c| module_holds(c, &names)).cloned().collect();
    if some.is_empty() { cubins.to_vec() } else { some }
}

/// Whether the module file holds one of these byte strings (a function's name in its string table).
fn module_holds(cubin: &str, names: &[Vec<u8>]) -> bool {
    std::fs::read(cubin).is_ok_and(|b| names.iter().any(|n| b.windows(n.len()).any(|w| w == n.as_slice())))
}

/// The functions of the modules a run saved, disassembled (`nvdisasm -c -g`,
/// one process a module, at once), with what failed.
async fn disassemble(
    nvdisasm: &Path,
    cubins: &[String],
    timeout: Duration,
    cancel: &CancellationToken,
) -> (Vec<kernelpro_sass::disasm::Function>, Vec<String>) {
    let listings = futures::future::join_all(cubins.iter().map(|cubin| {
        let cmd = ToolCommand::new(nvdisasm, timeout).args(["-c", "-g", cubin.as_str()]);
        async move { run_tool(&cmd, cancel).await }
    }))
    .await;
    let (mut functions, mut notes) = (Vec::new(), Vec::new());
    for listing in listings {
        match listing {
            Ok(out) if out.success() => functions.extend(kernelpro_sass::disasm::parse_sass(&out.stdout).functions),
            Ok(out) => notes.push(format!("nvdisasm failed on a module: {}", out.stderr.lines().next().unwrap_or(""))),
            Err(e) => notes.push(format!("nvdisasm: {e}")),
        }
    }
    (functions, notes)
}

/// The modules a run saves into `saved` (the library writes each under another name and renames
/// it) that hold one of `names` (any, where none is given), each disassembled as soon as it
/// appears, until `ended` and what was started has finished.
async fn disassemble_as_saved(
    nvdisasm: &Path,
    saved: &Path,
    names: &[String],
    ended: &CancellationToken,
    timeout: Duration,
    cancel: &CancellationToken,
) -> (Vec<kernelpro_sass::disasm::Function>, Vec<String>) {
    use futures::stream::{FuturesUnordered, StreamExt};
    let names: Vec<Vec<u8>> = names.iter().map(|n| n.as_bytes().to_vec()).collect();
    let mut seen = std::collections::HashSet::new();
    let mut pending = FuturesUnordered::new();
    let (mut functions, mut notes) = (Vec::new(), Vec::new());
    loop {
        let last = ended.is_cancelled() || cancel.is_cancelled();
        let mut found: Vec<String> = std::fs::read_dir(saved)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().display().to_string())
            .filter(|p| p.ends_with(".cubin") && !seen.contains(p))
            .collect();
        found.sort();
        for path in found {
            seen.insert(path.clone());
            if !names.is_empty() && !module_holds(&path, &names) {
                continue;
            }
            pending.push(async move { disassemble(nvdisasm, &[path], timeout, cancel).await });
        }
        if last {
            break;
        }
        tokio::select! {
            Some((f, n)) = pending.next(), if !pending.is_empty() => {
                functions.extend(f);
                notes.extend(n);
            }
            _ = ended.cancelled() => {}
            _ = cancel.cancelled() => {}
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
    while let Some((f, n)) = pending.next().await {
        functions.extend(f);
        notes.extend(n);
    }
    (functions, notes)
}

/// Runs the target with the library loaded (`first_plan`, then `next_plans`
/// until nothing is missing, two rounds at most); meanwhile the modules the
/// first run saved are disassembled, to tie PC offsets to source lines.
#[tracing::instrument(level = "debug", name = "profile.cupti", skip_all, fields(kernel = req.kernel.as_deref()))]
pub async fn profile(
    req: &CuptiProfile,
    source_text: &str,
    cancel: &CancellationToken,
) -> Result<CuptiResult, CuptiError> {
    let dir = tempfile::Builder::new()
        .prefix("kernelpro-cupti-")
        .tempdir()
        .map_err(|e| CuptiError::Run(format!("cannot make a temp dir: {e}")))?;
    let mut stages = Vec::new();
    let start = std::time::Instant::now();
    let memo = PcMemo::read(&req.library);
    let round = first_round(req.kernel.as_deref(), memo.refused_here(), memo.runs_beside());
    let (mut plan, mut beside) = (round[0], round[1..].to_vec());
    // Samples beside the range profile (a harness kernel's or a program's)
    // take turns with it on the profiler (the H100 refuses two at once): the
    // sampling process starts up meanwhile and samples once the first has
    // released it.
    let done = dir.path().join("first-run.done");
    let takes_turns = beside == ["pc"];
    let (first_turn, beside_turn) =
        if takes_turns { (Turn::Signals(done.clone()), Turn::WaitsFor(done.clone())) } else { (Turn::Own, Turn::Own) };
    // The runs beside the first one, in tasks of their own; stopped (their
    // process groups killed) if this profile ends first.
    let stop_beside = cancel.child_token();
    let _stop_beside = stop_beside.clone().drop_guard();
    let mut beside_runs: Vec<_> = beside
        .iter()
        .map(|&p| {
            let (req, dir, cancel, turn) =
                (req.clone(), dir.path().to_path_buf(), stop_beside.clone(), beside_turn.clone());
            tokio::spawn(async move {
                let t = std::time::Instant::now();
                (injected_run(&req, &dir, p, &turn, &cancel).await, t.elapsed())
            })
        })
        .collect();
    // Set once the first run has ended (a program's modules are then all saved).
    let first_ended = CancellationToken::new();
    let early_disasm = async {
        let t = std::time::Instant::now();
        if req.modules.is_empty() && req.later.is_none() {
            // No module known before the run (a program): each is disassembled as the first run
            // saves it, meanwhile (on the H100 a program's nvdisasm took 0.4-0.7 s after that run,
            // on the save's critical path).
            let saved = dir.path().join(format!("{}-0-modules", plan.replace(',', "-")));
            // Only modules with one of the file's kernels in them: a program's libraries (cuBLAS)
            // load modules of their own, which could take nvdisasm seconds.
            let names: Vec<String> = match (&req.kernel, req.only.is_empty()) {
                (Some(k), _) => vec![k.clone()],
                (None, false) => req.only.clone(),
                (None, true) => kernelpro_source::parse(source_text).kernels().map(|f| f.name.clone()).collect(),
            };
            let got = disassemble_as_saved(&req.nvdisasm, &saved, &names, &first_ended, req.timeout, cancel).await;
            return (got, t.elapsed());
        }
        let modules = match &req.later {
            Some(late) => late.modules().await,
            None => req.modules.clone(),
        };
        let modules: Vec<String> = modules.iter().map(|m| m.display().to_string()).collect();
        let got = disassemble(&req.nvdisasm, &modules, req.timeout, cancel).await;
        (got, t.elapsed())
    };
    let first = async {
        let run = injected_run(req, dir.path(), plan, &first_turn, cancel).await;
        first_ended.cancel();
        if takes_turns {
            // However the first run ended, the other's turn has come (a file the library wrote,
            // with the kernel's time that sets the sampling period, is kept).
            let _ = std::fs::OpenOptions::new().write(true).create_new(true).open(&done);
        }
        run
    };
    let (run, ((early_functions, early_notes), early_time)) = futures::join!(first, early_disasm);
    stages.push(Stage::new(format!("injected run ({plan})"), start.elapsed()));
    let mut notes = Vec::new();
    let mut apart = false;
    let mut run = match run {
        Ok(run) => run,
        // Two processes profiling at once may be what failed: the runs
        // beside are stopped, and the first plan runs alone, as before.
        Err(e) if !beside.is_empty() && !cancel.is_cancelled() => {
            stop_beside.cancel();
            for handle in beside_runs.drain(..) {
                let _ = handle.await;
            }
            notes.push(format!("the first run failed beside ({}), so it ran alone: {e}", beside.join(" | ")));
            (plan, beside, apart) = (first_plan(req.kernel.as_deref()), Vec::new(), true);
            let t = std::time::Instant::now();
            let run = injected_run(req, dir.path(), plan, &Turn::Own, cancel).await;
            stages.push(Stage::new(format!("injected run ({plan})"), t.elapsed()));
            run?
        }
        Err(e) => return Err(e),
    };
    if !req.modules.is_empty() || req.later.is_some() {
        stages.push(Stage::new("disassembly of the known modules (during the first run)".into(), early_time));
    } else if !early_functions.is_empty() || !early_notes.is_empty() {
        stages.push(Stage::new("disassembly of the modules the first run saved (as it saved them)".into(), early_time));
    }
    let wanted = |p: &KernelProfile| {
        req.kernel.as_deref().is_none_or(|k| p.kernel == k) && (req.only.is_empty() || req.only.contains(&p.kernel))
    };
    run.profiles.retain(wanted);
    if run.profiles.is_empty() {
        let which = req.kernel.as_deref().map(|k| format!(" named {k}")).unwrap_or_default();
        return Err(CuptiError::NoKernel(which));
    }
    let mangled: Vec<String> = run.profiles.iter().filter_map(|p| p.mangled.clone()).collect();
    let refused = pc_refused(plan, &run, &mangled);
    run.cubins.sort();
    run.cubins.dedup();
    // The saved modules only for what the known ones do not hold.
    let known = mangled.iter().all(|m| early_functions.iter().any(|f| &f.mangled == m));
    let first_modules = if known { Vec::new() } else { modules_holding(&run.cubins, &mangled) };
    let disasm = async {
        let t = std::time::Instant::now();
        let got = disassemble(&req.nvdisasm, &first_modules, req.timeout, cancel).await;
        (got, t.elapsed())
    };
    let more_runs = async {
        let (mut got, mut stages, mut notes, mut apart) = (CuptiRun::default(), Vec::new(), Vec::new(), false);
        for (p, handle) in beside.iter().zip(beside_runs) {
            match handle.await {
                Ok((Ok(more), took)) => {
                    stages.push(Stage::new(format!("injected run ({p}) beside the first"), took));
                    got.merge(more);
                }
                // Nothing lost: `next_plans` runs it again, alone.
                Ok((Err(e), took)) => {
                    stages.push(Stage::new(format!("injected run ({p}) beside the first"), took));
                    notes.push(format!("the ({p}) run beside the first failed, so it ran again after it: {e}"));
                    apart = !cancel.is_cancelled();
                }
                Err(e) => notes.push(format!("the ({p}) run beside the first did not end: {e}")),
            }
        }
        // Beside runs that gave no samples (sampling refused while another
        // process profiles): one process from now on.
        if !beside.is_empty() && !mangled.iter().all(|m| got.has_stalls(m) || run.has_stalls(m)) {
            apart = !cancel.is_cancelled();
        }
        for _ in 0..2 {
            let mut so_far = run.clone();
            so_far.merge(got.clone());
            let plans = next_plans(&so_far, &mangled);
            if plans.is_empty() {
                break;
            }
            let t = std::time::Instant::now();
            let runs =
                futures::future::join_all(plans.iter().map(|p| injected_run(req, dir.path(), p, &Turn::Own, cancel)))
                    .await;
            stages.push(Stage::new(format!("injected run ({})", plans.join(" | ")), t.elapsed()));
            let mut failed = false;
            for more in runs {
                match more {
                    Ok(more) => got.merge(more),
                    Err(e) => {
                        notes.push(format!("no per-line counters or stall samples: {e}"));
                        failed = true;
                    }
                }
            }
            if failed {
                break;
            }
        }
        (got, stages, notes, apart)
    };
    let (((mut functions, disasm_notes), disasm_time), (more, more_stages, more_notes, failed_beside)) =
        futures::join!(disasm, more_runs);
    // What this profile showed of the device, for the next one's plan.
    if let Some(device) = &run.device {
        let mut seen = memo.clone();
        seen.observe(device, refused);
        if apart || failed_beside {
            seen.keep_apart(device);
        }
        if seen != memo {
            seen.write(&req.library);
        }
    }
    functions.extend(early_functions);
    if !known {
        notes.extend(early_notes);
    }
    run.merge(more);
    stages.extend(more_stages);
    notes.extend(more_notes);
    let run_secs = start.elapsed().as_secs_f64();
    stages.push(Stage::new("disassembly (during the later runs)".into(), disasm_time));
    notes.extend(disasm_notes);
    if first_modules.is_empty() && !known {
        // No module saved by the first run: those of the later ones, now.
        run.cubins.sort();
        run.cubins.dedup();
        let t = std::time::Instant::now();
        let (f, n) = disassemble(&req.nvdisasm, &modules_holding(&run.cubins, &mangled), req.timeout, cancel).await;
        functions.extend(f);
        notes.extend(n);
        stages.push(Stage::new("disassembly".into(), t.elapsed()));
    }
    for w in &run.warnings {
        if w.starts_with("the program's copy") {
            notes.push(w.clone());
        } else if w.starts_with("pc ") {
            notes.push(format!("PC sampling in a process of its own: {w}"));
        } else if let Some(kernel) = w.strip_prefix("range after pc ") {
            notes.push(format!("{kernel} not profiled: PC sampling of an earlier kernel had the context"));
        }
    }
    for (step, ms) in &run.step_ms {
        stages.push(Stage { name: format!("in the library: {step}"), secs: ms / 1e3 });
    }
    let start = std::time::Instant::now();
    let mut registers = std::collections::BTreeMap::new();
    for cubin in &run.cubins {
        if let Ok(bytes) = std::fs::read(cubin) {
            registers.extend(register_counts(&bytes));
        }
    }
    let mut result = CuptiResult { notes, run_secs, stages, ..Default::default() };
    for mut profile in run.profiles {
        if let Some(&regs) = profile.mangled.as_ref().and_then(|m| registers.get(m)) {
            pages::set_registers(&mut profile, regs);
        }
        let mangled = profile.mangled.clone().unwrap_or_default();
        let Some(pcs) = run.pcs.get(&mangled) else {
            result.notes.push(format!("no per-line counters for {}", profile.kernel));
            result.profiles.push(profile);
            continue;
        };
        let Some(f) = functions.iter().find(|f| f.mangled == mangled) else {
            result.notes.push(format!("no disassembly of {}", profile.kernel));
            result.profiles.push(profile);
            continue;
        };
        let instructions = instructions_of(f);
        let stalls = run.stalls.get(&mangled);
        let page = pages::source_page(&profile, &instructions, pcs, stalls, None, source_text);
        pages::add_source_totals(&mut profile, &page);
        if let Some(stalls) = stalls {
            pages::add_stall_totals(&mut profile, stalls);
        }
        result.pages.push(page);
        result.profiles.push(profile);
    }
    if !run.skipped.is_empty() {
        result.notes.push(format!("not collected on this GPU: {}", run.skipped.join(", ")));
    }
    result.disasm_secs = disasm_time.as_secs_f64() + start.elapsed().as_secs_f64();
    result.stages.push(Stage::new("source pages".into(), start.elapsed()));
    Ok(result)
}

/// Registers per thread of each function of a cubin (its `.nv.info`
/// section's `EIATTR_REGCOUNT` entries, by symbol), for where the driver
/// did not tell the library.
pub fn register_counts(cubin: &[u8]) -> std::collections::BTreeMap<String, u32> {
    let mut out = std::collections::BTreeMap::new();
    let u16_at = |o: usize| cubin.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |o: usize| cubin.get(o..o + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let u64_at = |o: usize| cubin.get(o..o + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap()) as usize);
    let cstr = |o: usize| -> Option<String> {
        let rest = cubin.get(o..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&rest[..end]).into_owned())
    };
    // ELF64, little-endian.
    if cubin.get(..5) != Some(b"\x7fELF\x02".as_slice()) {
        return out;
    }
    let (Some(shoff), Some(shentsize), Some(shnum), Some(shstrndx)) =
        (u64_at(0x28), u16_at(0x3A), u16_at(0x3C), u16_at(0x3E))
    else {
        return out;
    };
    // (name, offset, size) of each section.
    let header = |i: usize| -> Option<(usize, usize, usize)> {
        let h = shoff + i * shentsize;
        Some((u32_at(h)?, u64_at(h + 24)?, u64_at(h + 32)?))
    };
    let Some((_, names_at, _)) = header(shstrndx) else { return out };
    let sections: Vec<(String, usize, usize)> = (0..shnum)
        .filter_map(|i| {
            let (name, off, size) = header(i)?;
            Some((cstr(names_at + name)?, off, size))
        })
        .collect();
    let find = |n: &str| sections.iter().find(|s| s.0 == n).map(|s| (s.1, s.2));
    let (Some((symtab, _)), Some((strtab, _)), Some((info, info_size))) =
        (find(".symtab"), find(".strtab"), find(".nv.info"))
    else {
        return out;
    };
    let mut o = info;
    while o + 4 <= info + info_size {
        let (Some(fmt), Some(attr), Some(v)) = (cubin.get(o), cubin.get(o + 1), u16_at(o + 2)) else { break };
        o += 4;
        // EIFMT_SVAL carries `v` bytes; EIATTR_REGCOUNT (0x2f): symbol index, count.
        if *fmt == 4 {
            if *attr == 0x2f
                && let (Some(sym), Some(count)) = (u32_at(o), u32_at(o + 4))
                && let Some(name) = u32_at(symtab + sym * 24).and_then(|n| cstr(strtab + n))
            {
                out.insert(name, count as u32);
            }
            o += v;
        }
    }
    out
}

/// A disassembled function's instructions with the source line of each.
pub fn instructions_of(f: &kernelpro_sass::disasm::Function) -> Vec<Instruction> {
    let mut line_of: Vec<Option<(String, u32)>> = vec![None; f.instructions.len()];
    for l in &f.lines {
        for &i in &l.instructions {
            if let Some(slot) = line_of.get_mut(i) {
                slot.get_or_insert_with(|| (l.source.file.clone(), l.source.line));
            }
        }
    }
    f.instructions
        .iter()
        .zip(line_of)
        .map(|(ins, line)| {
            let pred = ins.predicate.as_ref().map(|p| format!("@{p} ")).unwrap_or_default();
            let text = format!("{pred}{} {}", ins.opcode, ins.operands).trim().to_string();
            Instruction { offset: ins.offset, text, line }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error the H100 gave while a hung profile still held the profiler says what to do.
    #[test]
    fn a_busy_profiler_says_another_process_holds_it() {
        let busy = busy_hint("cuptiProfilerGetCounterAvailability(&avail) CUPTI_ERROR_HARDWARE_BUSY".into());
        assert!(busy.contains("another process is profiling this GPU") && busy.contains("again"), "{busy}");
        assert_eq!(
            busy_hint("cuptiProfilerInitialize CUPTI_ERROR_UNKNOWN".into()),
            "cuptiProfilerInitialize CUPTI_ERROR_UNKNOWN"
        );
    }

    /// A toolchain without CUPTI: nothing found, and the note the profile
    /// carries when it falls back to ncu says where it looked.
    #[test]
    fn no_cupti_is_found_in_a_toolchain_without_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::create_dir_all(dir.path().join("include")).unwrap();
        std::fs::write(dir.path().join("include/cuda.h"), "").unwrap();
        assert_eq!(find_cupti_in(&roots_of(&[&dir.path().join("bin/nvcc")])), None);
        let note = crate::profiling::fallback_note(&CuptiError::NotFound);
        assert!(note.starts_with("profiled with ncu: CUPTI was not found"), "{note}");
        assert!(note.contains("KERNELPRO_CUPTI"), "{note}");
    }

    /// The register counts of a cubin built by the real nvcc, as ptxas reports them.
    #[test]
    fn register_counts_come_from_the_cubins_nv_info() {
        let nvcc = kernelpro_core::analysis::Analyzer::find_nvcc(&kernelpro_config::settings::Settings::default())
            .expect("nvcc (set KERNELPRO_VENV)");
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("k.cu");
        std::fs::write(
            &src,
            "__global__ void few(float* y) { y[threadIdx.x] = 1.0f; }\n\
             __global__ void many(float* y, const float* x, int n) {\n\
               float a[24]; for (int i = 0; i < 24; ++i) a[i] = x[i * n + threadIdx.x];\n\
               float s = 0; for (int i = 0; i < 24; ++i) s += a[i] * a[23 - i] + a[(i * 7) % 24];\n\
               y[threadIdx.x] = s; }\n",
        )
        .unwrap();
        let cubin = dir.path().join("k.cubin");
        let out = std::process::Command::new(&nvcc.path)
            .args(["-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o"])
            .arg(&cubin)
            .arg(&src)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let ptxas = String::from_utf8_lossy(&out.stderr).to_string();
        let counts = register_counts(&std::fs::read(&cubin).unwrap());
        assert_eq!(counts.len(), 2, "{counts:?}");
        for (name, regs) in &counts {
            let said = format!("Compiling entry function '{name}'");
            let after = &ptxas[ptxas.find(&said).expect("ptxas names it")..];
            assert!(after.contains(&format!("Used {regs} registers")), "{name}: {regs} vs {ptxas}");
        }
    }

    /// The library's cache of the range profiler's configuration, built with
    /// the real nvcc and run: written whole, read back, and any file that is
    /// absent, of another key, truncated, corrupt or longer is a miss.
    #[test]
    fn the_config_cache_reads_back_what_it_wrote_and_nothing_else() {
        let nvcc = kernelpro_core::analysis::Analyzer::find_nvcc(&kernelpro_config::settings::Settings::default())
            .expect("nvcc (set KERNELPRO_VENV)");
        let whole = library_source();
        assert!(whole.contains("struct ConfigCache") && !whole.contains("#include \"config_cache.h\""));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config_cache.h"), CONFIG_CACHE).unwrap();
        std::fs::write(
            dir.path().join("t.cpp"),
            r#"#include "config_cache.h"
int main(int argc, char** argv) {
  std::string mode = argv[1], dir = argv[2], key = "chip=GH100;cupti=130200;metrics=a.sum,b.pct,x";
  kp::ConfigCache c;
  if (mode == "write") {
    c.metrics = {"a.sum", "b.pct"}, c.skipped = {"x"}, c.passes = 7, c.image = {1, 0, 10, 255, '\n'};
    return kp::cache_write(kp::cache_path(dir, key), key, c) ? 0 : 1;
  }
  if (mode == "path") return printf("%s", kp::cache_path(dir, key).c_str()) < 0;
  std::string asked = mode == "other" ? key + ",y" : key;
  if (!kp::cache_read(kp::cache_path(dir, key), asked, c)) return printf("miss") < 0;
  printf("%s|%s|%zu|", kp::join(c.metrics).c_str(), kp::join(c.skipped).c_str(), c.passes);
  for (auto b : c.image) printf("%d,", b);
}
"#,
        )
        .unwrap();
        let exe = dir.path().join("t");
        let out = std::process::Command::new(&nvcc.path)
            .args(["-std=c++17", "-o"])
            .arg(&exe)
            .arg(dir.path().join("t.cpp"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let run = |mode: &str| -> String {
            let out = std::process::Command::new(&exe).args([mode]).arg(dir.path()).output().unwrap();
            assert!(out.status.success(), "{mode}");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let file = PathBuf::from(run("path"));
        let wrote = "a.sum,b.pct|x|7|1,0,10,255,10,";
        type Damage = Option<fn(&mut Vec<u8>)>;
        let cases: [(&str, Damage); 5] = [
            ("absent", None),
            ("truncated", Some(|b| b.truncate(b.len() - 1))),
            ("corrupt", Some(|b| *b.last_mut().unwrap() ^= 1)),
            ("longer", Some(|b| b.push(0))),
            ("not a cache", Some(|b| *b = b"kp-cupti-config 2\n".to_vec())),
        ];
        for (case, change) in cases {
            if let Some(change) = change {
                assert_eq!(run("write"), "");
                assert_eq!(run("read"), wrote, "before {case}");
                let mut bytes = std::fs::read(&file).unwrap();
                change(&mut bytes);
                std::fs::write(&file, bytes).unwrap();
            }
            assert_eq!(run("read"), "miss", "{case}");
        }
        assert_eq!(run("write"), "");
        assert_eq!(run("other"), "miss", "another key");
        assert_eq!(run("read"), wrote);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(!left.iter().any(|n| n.to_string_lossy().contains(".tmp.")), "{left:?}");
    }

    /// The recorded H200 run (tests/fixtures/cupti/probe_h200_pc.tsv), cut
    /// into what each kind of injected run writes: (range records, SASS
    /// records, PC samples), each with the run's own `#` lines.
    fn recorded_parts() -> (String, String, String) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cupti/probe_h200_pc.tsv");
        let text = std::fs::read_to_string(path).unwrap();
        let (mut range, mut sass, mut pc) = (String::new(), String::new(), String::new());
        for line in text.lines() {
            let part = match line.split('\t').next() {
                Some("P" | "#sass") => &mut sass,
                Some("S" | "#pc") => &mut pc,
                _ => &mut range,
            };
            part.push_str(line);
            part.push('\n');
        }
        (range, sass, pc)
    }

    /// The driver against a fake program that writes, for each plan it is
    /// run with, the records given (a real process through `run_tool`, as
    /// the library would under the real one): the plans it was run with, in
    /// order (a round's concurrent runs sorted), and the profile's notes.
    /// Records `FAIL_ONCE` + text: the plan's first run fails, later ones write the text.
    fn drive(kernel: Option<&str>, records: &[(&str, String)]) -> (Vec<String>, CuptiResult) {
        drive_in(tempfile::tempdir().unwrap().path(), kernel, records)
    }

    /// `drive` with modules known before the run and a real nvdisasm.
    fn drive_known(kernel: &str, records: &[(&str, String)], nvdisasm: &Path, known: &Path) -> CuptiResult {
        let dir = tempfile::tempdir().unwrap();
        drive_with(dir.path(), Some(kernel), records, Some((nvdisasm, vec![known.to_path_buf()]))).1
    }

    const FAIL_ONCE: &str = "FAIL_ONCE\n";

    /// `drive` with the library (and the memo beside it) under `dir`, kept between calls.
    fn drive_in(dir: &Path, kernel: Option<&str>, records: &[(&str, String)]) -> (Vec<String>, CuptiResult) {
        drive_with(dir, kernel, records, None)
    }

    fn drive_with(
        dir: &Path,
        kernel: Option<&str>,
        records: &[(&str, String)],
        known: Option<(&Path, Vec<PathBuf>)>,
    ) -> (Vec<String>, CuptiResult) {
        // Taking turns (`Turn`): the signalling run takes a while and never signals itself (the
        // driver must); the waiting one waits for the file (20 s at most). TURNS logs both, in order.
        let mut script = String::from(
            "echo \"$KP_CUPTI_PLAN\" >> \"$LOG\"\n\
             if [ -n \"$KP_CUPTI_DONE\" ]; then echo \"$KP_CUPTI_PLAN signals\" >> \"$TURNS\"; sleep 0.3; fi\n\
             if [ -n \"$KP_CUPTI_WAIT_FOR\" ]; then echo \"$KP_CUPTI_PLAN waits\" >> \"$TURNS\"; i=0; \
             while [ ! -e \"$KP_CUPTI_WAIT_FOR\" ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; fi\n\
             trap 'echo \"$KP_CUPTI_PLAN ends\" >> \"$TURNS\"' EXIT\n\
             case \"$KP_CUPTI_PLAN\" in\n",
        );
        for (plan, text) in records {
            let name = plan.replace(',', "-");
            let file = dir.join(format!("{name}.tsv"));
            let cat = format!("cat '{}' >> \"$KP_CUPTI_OUT\"", file.display());
            match text.strip_prefix(FAIL_ONCE) {
                Some(rest) => {
                    std::fs::write(&file, rest).unwrap();
                    let mark = dir.join(format!("{name}.failed"));
                    let m = mark.display();
                    script
                        .push_str(&format!("  {plan}) if [ -e '{m}' ]; then {cat}; else touch '{m}'; exit 3; fi ;;\n"));
                }
                None => {
                    std::fs::write(&file, text).unwrap();
                    script.push_str(&format!("  {plan}) {cat} ;;\n"));
                }
            }
        }
        script.push_str("esac\n");
        let log = dir.join("plans.log");
        let _ = std::fs::remove_file(&log);
        let turns = dir.join("turns.log");
        let _ = std::fs::remove_file(&turns);
        let req = CuptiProfile {
            library: dir.join("lib/libkp_cupti-test.so"),
            nvdisasm: known.as_ref().map_or_else(|| PathBuf::from("true"), |(n, _)| n.to_path_buf()),
            target: vec![
                "sh".into(),
                "-c".into(),
                format!("LOG='{}'\nTURNS='{}'\n{script}", log.display(), turns.display()),
            ],
            stdin: None,
            timeout: Duration::from_secs(30),
            kernel: kernel.map(str::to_string),
            only: vec![],
            modules: known.map(|(_, m)| m).unwrap_or_default(),
            launches_twice: false,
            later: None,
        };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let got = rt.block_on(profile(&req, "", &CancellationToken::new())).expect("profiled");
        let plans = std::fs::read_to_string(&log).unwrap().lines().map(str::to_string).collect();
        (plans, got)
    }

    const REFUSED: &str = "#warn\tpc\tcuptiPCSamplingEnable(&en)\tCUPTI_ERROR_NOT_SUPPORTED\n";

    /// Whether a harness kernel's next profile, by this memo, samples in a
    /// process beside its first run.
    fn samples_beside(memo: &PcMemo) -> bool {
        first_round(Some("k"), memo.refused_here(), memo.runs_beside()).contains(&"pc")
    }

    /// A program's save that changed two of its five kernels: the library is
    /// told their names (the others run unprofiled) and only they are kept.
    #[test]
    fn a_programs_changed_kernels_alone_are_profiled() {
        let (range, sass, pc) = recorded_parts();
        let dir = tempfile::tempdir().unwrap();
        let (all, told) = (dir.path().join("all.tsv"), dir.path().join("told.txt"));
        std::fs::write(&all, format!("{range}{sass}{pc}")).unwrap();
        let script = format!(
            "printf '%s' \"$KP_CUPTI_KERNEL\" > '{}'; cat '{}' >> \"$KP_CUPTI_OUT\"",
            told.display(),
            all.display()
        );
        let req = CuptiProfile {
            library: dir.path().join("lib/libkp_cupti-test.so"),
            nvdisasm: PathBuf::from("true"),
            target: vec!["sh".into(), "-c".into(), script],
            stdin: None,
            timeout: Duration::from_secs(30),
            kernel: None,
            only: vec!["transpose_conflicts".into(), "divergent".into()],
            modules: vec![],
            launches_twice: true,
            later: None,
        };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let got = rt.block_on(profile(&req, "", &CancellationToken::new())).expect("profiled");
        assert_eq!(std::fs::read_to_string(&told).unwrap(), "transpose_conflicts,divergent");
        let mut kernels: Vec<&str> = got.profiles.iter().map(|p| p.kernel.as_str()).collect();
        kernels.sort();
        assert_eq!(kernels, ["divergent", "transpose_conflicts"]);
    }

    /// A program's copy whose launches run twice may fail its own checks:
    /// its kernels' records are kept, with a note; the program as written
    /// failing is the profile's failure.
    #[test]
    fn a_twice_launching_copy_that_exits_nonzero_keeps_its_records() {
        let (range, sass, pc) = recorded_parts();
        let dir = tempfile::tempdir().unwrap();
        let all = dir.path().join("all.tsv");
        std::fs::write(&all, format!("{range}{sass}{pc}")).unwrap();
        let req = |launches_twice| CuptiProfile {
            library: dir.path().join("lib/libkp_cupti-test.so"),
            nvdisasm: PathBuf::from("true"),
            target: vec!["sh".into(), "-c".into(), format!("cat '{}' >> \"$KP_CUPTI_OUT\"; exit 1", all.display())],
            stdin: None,
            timeout: Duration::from_secs(30),
            kernel: None,
            only: vec![],
            modules: vec![],
            launches_twice,
            later: None,
        };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let got = rt.block_on(profile(&req(true), "", &CancellationToken::new())).expect("kept");
        assert_eq!(got.profiles.len(), 5);
        assert!(got.notes.iter().any(|n| n.contains("exited with status 1")), "{:?}", got.notes);
        let failed = rt.block_on(profile(&req(false), "", &CancellationToken::new()));
        assert!(matches!(failed, Err(CuptiError::Run(_))), "{failed:?}");
    }

    /// Where the device refuses sampling after the range profiler, the
    /// sampling process starts beside the first and samples only once the
    /// first has ended or released the profiler: here the first never
    /// signals itself, so the driver's file is what lets the other go on.
    #[test]
    fn the_sampling_process_beside_the_first_waits_for_its_turn() {
        let (range, sass, pc) = recorded_parts();
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib/libkp_cupti-test.so");
        std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
        PcMemo { last: Some("GH100".into()), refused: vec!["GH100".into()], apart: vec![] }.write(&lib);
        let started = std::time::Instant::now();
        let (_, got) =
            drive_in(dir.path(), Some("strided_copy"), &[("range,sass", format!("{range}{sass}")), ("pc", pc)]);
        assert!(started.elapsed() < Duration::from_secs(10), "the waiting run waited past the first");
        let turns = std::fs::read_to_string(dir.path().join("turns.log")).unwrap();
        let lines: Vec<&str> = turns.lines().collect();
        let at = |l: &str| lines.iter().position(|x| *x == l).unwrap_or_else(|| panic!("{l}: {lines:?}"));
        assert!(at("range,sass signals") < at("range,sass ends"), "{lines:?}");
        assert!(at("pc waits") < at("pc ends") && at("range,sass ends") < at("pc ends"), "{lines:?}");
        assert_eq!(got.profiles.len(), 1);
        let names: Vec<&str> = got.stages.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names[..2], ["injected run (range,sass)", "injected run (pc) beside the first"], "{names:?}");
        assert!(!names.contains(&"injected run (pc)"), "sampled again after: {names:?}");
    }

    /// The first profile on a device that refuses PC sampling after the
    /// range profiler pays for the refusal and remembers it; the next one
    /// starts the `pc` process beside the `range,sass` one, and nothing after.
    #[test]
    fn a_refusal_is_remembered_and_the_next_profile_samples_beside_the_first() {
        let (range, sass, pc) = recorded_parts();
        let dir = tempfile::tempdir().unwrap();
        let (plans, _) = drive_in(
            dir.path(),
            Some("strided_copy"),
            &[("range,sass,pc", format!("{range}{sass}{REFUSED}")), ("pc", pc.clone())],
        );
        assert_eq!(plans, ["range,sass,pc", "pc"]);
        let memo = PcMemo::read(&dir.path().join("lib/libkp_cupti-test.so"));
        assert_eq!(memo, PcMemo { last: Some("GH100".into()), refused: vec!["GH100".into()], apart: vec![] });
        let (mut plans, got) =
            drive_in(dir.path(), Some("strided_copy"), &[("range,sass", format!("{range}{sass}")), ("pc", pc)]);
        plans.sort();
        assert_eq!(plans, ["pc", "range,sass"]);
        assert_eq!(got.profiles.len(), 1);
        let names: Vec<&str> = got.stages.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names[..2], ["injected run (range,sass)", "injected run (pc) beside the first"], "{names:?}");
        assert!(!got.notes.iter().any(|n| n.contains("stall samples") || n.contains("beside")), "{:?}", got.notes);
        assert!(samples_beside(&PcMemo::read(&dir.path().join("lib/libkp_cupti-test.so"))));
        // A pc run beside that comes back without samples: sampled again
        // after, and one process from then on.
        let empty = "#warn\tpc\tcuptiPCSamplingEnable(&en)\tCUPTI_ERROR_HARDWARE_BUSY\n".to_string();
        let (mut plans, _) =
            drive_in(dir.path(), Some("strided_copy"), &[("range,sass", format!("{range}{sass}")), ("pc", empty)]);
        plans[..2].sort();
        assert_eq!(plans[..3], ["pc", "range,sass", "pc"]);
        assert!(!samples_beside(&PcMemo::read(&dir.path().join("lib/libkp_cupti-test.so"))));
    }

    /// A `pc` run beside the first that fails is run again after it, alone.
    #[test]
    fn a_failed_run_beside_the_first_runs_again_after_it() {
        let (range, sass, pc) = recorded_parts();
        let dir = tempfile::tempdir().unwrap();
        let library = dir.path().join("lib/libkp_cupti-test.so");
        std::fs::create_dir_all(library.parent().unwrap()).unwrap();
        PcMemo { last: Some("GH100".into()), refused: vec!["GH100".into()], ..Default::default() }.write(&library);
        let (mut plans, got) = drive_in(
            dir.path(),
            Some("strided_copy"),
            &[("range,sass", format!("{range}{sass}")), ("pc", format!("{FAIL_ONCE}{pc}"))],
        );
        plans[..2].sort();
        assert_eq!(plans, ["pc", "range,sass", "pc"]);
        assert!(got.notes.iter().any(|n| n.contains("the (pc) run beside the first failed")), "{:?}", got.notes);
        let names: Vec<&str> = got.stages.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"injected run (pc)"), "{names:?}");
        let memo = PcMemo::read(&library);
        assert_eq!(memo.apart, ["GH100"], "two processes at once failed here");
        assert!(!samples_beside(&memo));
    }

    /// A first run that fails beside the `pc` run runs again alone, with
    /// the one-process plan, and the device is kept to one process after.
    #[test]
    fn a_first_run_that_fails_beside_another_runs_again_alone() {
        let (range, sass, pc) = recorded_parts();
        let dir = tempfile::tempdir().unwrap();
        let library = dir.path().join("lib/libkp_cupti-test.so");
        std::fs::create_dir_all(library.parent().unwrap()).unwrap();
        PcMemo { last: Some("GH100".into()), refused: vec!["GH100".into()], ..Default::default() }.write(&library);
        let whole = format!("{range}{sass}{pc}");
        let records =
            [("range,sass", format!("{FAIL_ONCE}{range}{sass}")), ("pc", pc.clone()), ("range,sass,pc", whole.clone())];
        let (plans, got) = drive_in(dir.path(), Some("strided_copy"), &records);
        // The `pc` run beside may or may not have started before it was stopped.
        assert!(plans.iter().any(|p| p == "range,sass"), "{plans:?}");
        assert_eq!(plans.last().map(String::as_str), Some("range,sass,pc"), "{plans:?}");
        assert_eq!(got.profiles.len(), 1);
        assert!(got.notes.iter().any(|n| n.starts_with("the first run failed beside (pc), so it ran alone")));
        assert_eq!(PcMemo::read(&library).apart, ["GH100"]);
        let (plans, _) = drive_in(dir.path(), Some("strided_copy"), &[("range,sass,pc", whole)]);
        assert_eq!(plans, ["range,sass,pc"]);
    }

    /// Where the device of the last run never refused (the refusal known is
    /// another device's), one process; a program is planned as before.
    #[test]
    fn a_device_not_known_to_refuse_keeps_one_process() {
        let (range, sass, pc) = recorded_parts();
        let dir = tempfile::tempdir().unwrap();
        let library = dir.path().join("lib/libkp_cupti-test.so");
        std::fs::create_dir_all(library.parent().unwrap()).unwrap();
        PcMemo { last: Some("GH100".into()), refused: vec!["GB100 driver=1".into()], ..Default::default() }
            .write(&library);
        let (plans, _) = drive_in(dir.path(), Some("strided_copy"), &[("range,sass,pc", format!("{range}{sass}{pc}"))]);
        assert_eq!(plans, ["range,sass,pc"]);
        // A program (no kernel named; its copy launches each kernel twice) samples beside its range
        // profile and SASS pass, whatever was refused; where two processes at once failed, after it.
        PcMemo { last: Some("GH100".into()), refused: vec!["GH100".into()], ..Default::default() }.write(&library);
        let (mut plans, _) =
            drive_in(dir.path(), None, &[("range,sass", format!("{range}{sass}")), ("pc", pc.clone())]);
        plans.sort();
        assert_eq!(plans, ["pc", "range,sass"]);
        PcMemo { last: Some("GH100".into()), apart: vec!["GH100".into()], ..Default::default() }.write(&library);
        let (plans, _) = drive_in(dir.path(), None, &[("range,sass", format!("{range}{sass}")), ("pc", pc)]);
        assert_eq!(plans, ["range,sass", "pc"]);
    }

    /// The memo's transitions: what a run shows, per device, and what the next run predicts.
    #[test]
    fn the_pc_memo_follows_what_runs_show() {
        let gh = "GH100 driver=13000";
        let cases: [(&str, &str, Option<bool>, bool); 6] = [
            ("", gh, Some(true), true),
            ("", gh, None, false),
            ("last\tGB100\nrefused\tGH100 driver=13000\n", gh, None, true),
            ("last\tGH100 driver=13000\nrefused\tGH100 driver=13000\n", gh, Some(false), false),
            ("last\tGH100 driver=13000\nrefused\tGH100 driver=13000\n", "GH100 driver=13100", None, false),
            ("refused\tGH100 driver=13000\napart\tGH100 driver=13000\n", gh, Some(true), false),
        ];
        for (before, device, refused, beside) in cases {
            let mut memo = PcMemo::parse(before);
            memo.observe(device, refused);
            assert_eq!(samples_beside(&memo), beside, "{before:?} {device} {refused:?}");
            assert_eq!(PcMemo::parse(&memo.text()), memo);
        }
    }

    const ZERO_SAMPLES: &str = "strided_copy(float*, float const*, int, int)";

    /// What a first run says about PC sampling after the range profiler.
    #[test]
    fn a_refusal_is_a_pc_warning_without_samples() {
        let (range, sass, pc) = recorded_parts();
        let m = |run: &CuptiRun| run.profiles.iter().filter_map(|p| p.mangled.clone()).collect::<Vec<_>>();
        let cases = [
            ("range,sass,pc", format!("{range}{sass}{REFUSED}"), Some(true)),
            ("range,sass,pc", format!("{range}{sass}{pc}"), Some(false)),
            ("range,sass,pc", format!("{range}{sass}"), None),
            // Sampled, no warning, no samples (the H100 of 2026-12-07).
            (
                "range,sass,pc",
                format!("{range}{sass}#pc\t{ZERO_SAMPLES}\tsamples=0\tdropped=0\tms=289.7\n"),
                Some(true),
            ),
            ("range,sass", format!("{range}{sass}{REFUSED}"), None),
            ("pc", pc.clone(), None),
        ];
        for (plan, text, refused) in cases {
            let run = pages::parse_cupti(&text);
            let mangled: Vec<String> = m(&run).into_iter().filter(|n| n.contains("strided_copy")).collect();
            assert_eq!(pc_refused(plan, &run, &mangled), refused, "{plan}");
        }
    }

    /// A cubin of the recorded kernel's signature (`strided_copy`), built in `dir` by the real nvcc,
    /// and the nvdisasm beside it.
    fn strided_copy_cubin(dir: &Path) -> (PathBuf, PathBuf) {
        let nvcc = kernelpro_core::analysis::Analyzer::find_nvcc(&kernelpro_config::settings::Settings::default())
            .expect("nvcc (set KERNELPRO_VENV)");
        let src = dir.join("k.cu");
        std::fs::write(
            &src,
            "__global__ void strided_copy(float* y, const float* x, int n, int s) {\n\
               int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
               if (i < n) y[i] = x[(i * s) % n];\n}\n",
        )
        .unwrap();
        let cubin = dir.join("k.cubin");
        let out = std::process::Command::new(&nvcc.path)
            .args(["-arch=sm_90", "-cubin", "-lineinfo", "-o"])
            .arg(&cubin)
            .arg(&src)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (nvcc.path.with_file_name("nvdisasm"), cubin)
    }

    /// The harness job's cubin, known before the run, is disassembled during
    /// it (the real nvdisasm on a cubin of the recorded kernel's signature):
    /// the modules the run saved (absent here) are not, and the kernel gets
    /// its source page.
    #[test]
    fn the_known_module_is_disassembled_during_the_first_run() {
        let dir = tempfile::tempdir().unwrap();
        let (nvdisasm, cubin) = strided_copy_cubin(dir.path());
        let (range, sass, pc) = recorded_parts();
        let records = [("range,sass,pc", format!("{range}{sass}{pc}"))];
        let got = drive_known("strided_copy", &records, &nvdisasm, &cubin);
        assert_eq!(got.pages.len(), 1, "{:?}", got.notes);
        assert!(!got.notes.iter().any(|n| n.contains("nvdisasm") || n.contains("no disassembly")), "{:?}", got.notes);
        let names: Vec<&str> = got.stages.iter().map(|s| s.name.as_str()).collect();
        for stage in ["disassembly of the known modules (during the first run)", "disassembly (during the later runs)"]
        {
            assert!(names.contains(&stage), "{stage}: {names:?}");
        }
        // Without it, the saved modules are what is disassembled (here: absent, said so).
        let got = drive_with(dir.path(), Some("strided_copy"), &records, Some((&nvdisasm, vec![]))).1;
        assert!(got.pages.is_empty() && got.notes.iter().any(|n| n.contains("nvdisasm")), "{:?}", got.notes);
    }

    /// A program's modules are known only once it loads them: each is disassembled as the first
    /// run saves it (written under another name, then renamed; a part never renamed is not read,
    /// nor a module without the profiled kernel in it), while the run goes on, and not again after it.
    #[test]
    fn a_programs_module_is_disassembled_while_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (nvdisasm, cubin) = strided_copy_cubin(dir.path());
        let (range, sass, pc) = recorded_parts();
        let all = dir.path().join("all.tsv");
        std::fs::write(&all, format!("{range}{sass}{pc}")).unwrap();
        // The first run saves its module at once and runs on for a second; its second part is cut.
        let script = format!(
            "if [ \"$KP_CUPTI_PLAN\" = range,sass ]; then cp '{c}' \"$KP_CUPTI_DIR/module_0.cubin.part\"; \
             mv \"$KP_CUPTI_DIR/module_0.cubin.part\" \"$KP_CUPTI_DIR/module_0.cubin\"; \
             head -c 100 '{c}' > \"$KP_CUPTI_DIR/module_1.cubin.part\"; \
             echo 'a library module' > \"$KP_CUPTI_DIR/module_2.cubin\"; sleep 1; fi; cat '{a}' >> \"$KP_CUPTI_OUT\"",
            c = cubin.display(),
            a = all.display()
        );
        let req = CuptiProfile {
            library: dir.path().join("lib/libkp_cupti-test.so"),
            nvdisasm,
            target: vec!["sh".into(), "-c".into(), script],
            stdin: None,
            timeout: Duration::from_secs(30),
            kernel: None,
            // The recorded program's other kernels are not in this cubin.
            only: vec!["strided_copy".into()],
            modules: vec![],
            launches_twice: true,
            later: None,
        };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let got = rt.block_on(profile(&req, "", &CancellationToken::new())).expect("profiled");
        assert_eq!(got.pages.len(), 1, "{:?}", got.notes);
        assert!(!got.notes.iter().any(|n| n.contains("nvdisasm") || n.contains("no disassembly")), "{:?}", got.notes);
        let stage = |name: &str| got.stages.iter().find(|s| s.name == name).map(|s| s.secs);
        let during = stage("disassembly of the modules the first run saved (as it saved them)");
        let run = stage("injected run (range,sass)");
        assert!(during.is_some() && run.is_some(), "{:?}", got.stages);
        // Done while the run went on: it ended with the run, not a disassembly after it.
        assert!(during.unwrap() <= run.unwrap() + 0.05, "{:?}", got.stages);
        assert!(stage("disassembly").is_none(), "{:?}", got.stages);
        // The module without the kernel is not read (nvdisasm would fail on it, with a note).
        let saved = dir.path().join("saved");
        std::fs::create_dir_all(&saved).unwrap();
        std::fs::copy(&cubin, saved.join("module_0.cubin")).unwrap();
        std::fs::write(saved.join("module_2.cubin"), "a library module").unwrap();
        let ended = CancellationToken::new();
        ended.cancel();
        let names = ["strided_copy".to_string()];
        let (functions, notes) = rt.block_on(disassemble_as_saved(
            &req.nvdisasm,
            &saved,
            &names,
            &ended,
            req.timeout,
            &CancellationToken::new(),
        ));
        assert!(notes.is_empty() && functions.iter().any(|f| f.mangled.contains("strided_copy")), "{notes:?}");
        let (_, notes) = rt.block_on(disassemble_as_saved(
            &req.nvdisasm,
            &saved,
            &[],
            &ended,
            req.timeout,
            &CancellationToken::new(),
        ));
        assert!(notes.iter().any(|n| n.contains("nvdisasm failed")), "{notes:?}");
    }

    /// The plans of the first round.
    #[test]
    fn the_first_round_splits_off_sampling_where_it_is_refused_and_a_programs_passes_always() {
        let cases: [(Option<&str>, bool, bool, &[&str]); 7] = [
            (Some("k"), false, true, &["range,sass,pc"]),
            (Some("k"), true, true, &["range,sass", "pc"]),
            (Some("k"), true, false, &["range,sass"]),
            (None, false, true, &["range,sass", "pc"]),
            (None, true, true, &["range,sass", "pc"]),
            (None, false, false, &["range,sass"]),
            (None, true, false, &["range,sass"]),
        ];
        for (kernel, refused, beside, round) in cases {
            assert_eq!(first_round(kernel, refused, beside), round, "{kernel:?} {refused} {beside}");
        }
    }

    /// Only the modules that hold a profiled kernel are disassembled; none: all.
    #[test]
    fn only_the_modules_of_the_profiled_kernels_are_disassembled() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            p.display().to_string()
        };
        let (job, worker) = (file("job.cubin", b"\x7fELF\0_Z4fillPf\0_Z3sumPf\0"), file("w.cubin", b"\0_Z4fillPf\0"));
        let all = [job.clone(), worker.clone()];
        assert_eq!(modules_holding(&all, &["_Z3sumPf".into()]), [job]);
        assert_eq!(modules_holding(&all, &["_Z3sum".into()]), all, "a prefix is not a name");
        assert_eq!(modules_holding(&all, &["_Z5otherv".into()]), all);
    }

    /// Harness mode, one kernel: range, SASS and PC sampling in one process;
    /// no second run when the samples came.
    #[test]
    fn one_process_where_pc_sampling_follows_the_range_profiler() {
        let (range, sass, pc) = recorded_parts();
        let (plans, got) = drive(Some("strided_copy"), &[("range,sass,pc", format!("{range}{sass}{pc}"))]);
        assert_eq!(plans, ["range,sass,pc"]);
        assert_eq!(got.profiles.len(), 1);
        assert!(!got.notes.iter().any(|n| n.contains("PC sampling")), "{:?}", got.notes);
        let names: Vec<&str> = got.stages.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names[0], "injected run (range,sass,pc)");
        for step in ["in the library: range", "in the library: sass", "in the library: pc", "source pages"] {
            assert!(names.contains(&step), "{step}: {names:?}");
        }
    }

    /// Where CUPTI refuses PC sampling after the range profiler (the
    /// library's `#warn pc` record), a second process samples, as before.
    #[test]
    fn pc_sampling_refused_in_process_falls_back_to_a_process_of_its_own() {
        let (range, sass, pc) = recorded_parts();
        let refused = "#warn\tpc\tcuptiPCSamplingEnable(&en)\tCUPTI_ERROR_NOT_SUPPORTED\n";
        let (plans, got) =
            drive(Some("strided_copy"), &[("range,sass,pc", format!("{range}{sass}{refused}")), ("pc", pc)]);
        assert_eq!(plans, ["range,sass,pc", "pc"]);
        assert!(
            got.notes.iter().any(|n| n.contains("PC sampling in a process of its own") && n.contains("NOT_SUPPORTED")),
            "{:?}",
            got.notes
        );
        let names: Vec<&str> = got.stages.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"injected run (pc)"), "{names:?}");
    }

    /// A whole program whose kernels run once, profiled as its copy with every
    /// launch twice; and one whose launches could not be doubled.
    #[test]
    fn a_program_of_single_launches_gets_its_sass_and_samples_side_by_side() {
        // The copy with every launch twice: range profile and SASS pass in one process, the
        // samples in one beside it, no second round.
        let (range, sass, pc) = recorded_parts();
        let (mut plans, got) = drive(None, &[("range,sass", format!("{range}{sass}")), ("pc", pc.clone())]);
        plans.sort();
        assert_eq!(plans, ["pc", "range,sass"]);
        assert_eq!(got.profiles.len(), 5);
        assert!(got.notes.iter().all(|n| !n.starts_with("no per-line counters or stall")), "{:?}", got.notes);
        let names: Vec<&str> = got.stages.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"injected run (pc) beside the first"), "{names:?}");
        assert!(!names.iter().any(|n| n.contains(" | ") || n == &"injected run (sass)"), "no second round: {names:?}");
        // A program whose launches could not be doubled: its SASS pass in a process of its own after.
        let (mut plans, _) = drive(None, &[("range,sass", range), ("pc", pc), ("sass", sass)]);
        plans[..2].sort();
        assert_eq!(plans, ["pc", "range,sass", "sass"]);
    }

    /// The plans of a harness kernel and of a program, and the launches the
    /// harness worker makes for them.
    #[test]
    fn the_first_plan_fits_the_launches() {
        assert_eq!((first_plan(Some("k")), plan_launches(Some("k"))), ("range,sass,pc", 3));
        assert_eq!((first_plan(None), plan_launches(None)), ("range,sass", 2));
    }

    /// A pip-installed CUPTI (`nvidia/cu13/{include,lib}` beside nvcc's `bin`) is found.
    #[test]
    fn cupti_beside_a_pip_toolchain_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let cu = dir.path().join("nvidia/cu13");
        std::fs::create_dir_all(cu.join("bin")).unwrap();
        std::fs::create_dir_all(cu.join("include")).unwrap();
        std::fs::create_dir_all(cu.join("lib")).unwrap();
        std::fs::write(cu.join("include/cupti_range_profiler.h"), "").unwrap();
        std::fs::write(cu.join("include/cuda.h"), "").unwrap();
        std::fs::write(cu.join("lib/libcupti.so.13"), "").unwrap();
        let found = find_cupti_in(&roots_of(&[&cu.join("bin/nvcc")])).expect("found");
        assert_eq!(found.include, cu.join("include"));
        assert_eq!(found.lib, cu.join("lib"));
    }
}
