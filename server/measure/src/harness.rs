//! Running one kernel on a GPU: compile the file, resolve the kernel's launch
//! spec, and hand a job to the harness child process (`kernelpro __gpu-worker`),
//! optionally against a reference kernel on identical inputs.

use kernelpro_config::settings::Settings;
use kernelpro_core::analysis::{Analyzer, FileAnalysis};
use kernelpro_gpu::{HarnessError, Image, Job, JobResult, KernelJob, run_job};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One kernel of one file's text.
#[derive(Debug, Clone)]
pub struct KernelSource {
    pub path: PathBuf,
    pub text: String,
    /// `None`: the file's only kernel with a launch spec.
    pub kernel: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The `kernelpro` executable that serves as the worker.
    pub exe: PathBuf,
    pub runs: u32,
    pub warmup: u32,
    pub energy: bool,
    pub device: u32,
    /// Ends the worker (and its process group) when fired.
    pub cancel: tokio_util::sync::CancellationToken,
}

/// A kernel compiled and ready to launch; the temp dir holds its cubin.
pub struct Prepared {
    pub job: KernelJob,
    pub analysis: FileAnalysis,
    _dir: tempfile::TempDir,
}

/// Why a kernel could not be run, in words a user can act on.
pub fn prepare_error(path: &Path, what: impl std::fmt::Display) -> String {
    format!("{}: {what}", path.display())
}

pub async fn prepare(
    src: &KernelSource,
    settings: &Settings,
    analyzer: &Analyzer,
    cancel: &CancellationToken,
) -> Result<Prepared, String> {
    prepare_with(src, settings, analyzer, cancel, true).await
}

/// [`prepare`], with the machine-code step (nvdisasm, the SASS tools) only when
/// `machine_code`: a search's candidates skip it, as it costs about as much as
/// the compile itself; their findings are then the compile step's.
pub async fn prepare_with(
    src: &KernelSource,
    settings: &Settings,
    analyzer: &Analyzer,
    cancel: &CancellationToken,
    machine_code: bool,
) -> Result<Prepared, String> {
    let analyze = |text: String| async move {
        let first = analyzer.compile_step(&src.path, &text, settings, cancel).await?;
        if first.complete || !machine_code {
            return Ok(first);
        }
        analyzer.machine_code_step(&first, &text, settings, cancel).await
    };
    let mut analysis = analyze(src.text.clone()).await.map_err(|e| prepare_error(&src.path, e))?;
    if let Some(e) =
        analysis.findings.iter().find(|f| f.severity == kernelpro_model::Severity::Error && f.source != "spec")
    {
        return Err(prepare_error(
            &src.path,
            format!("does not compile: line {}: {}", e.span.start.line + 1, e.message),
        ));
    }
    let kernel = match &src.kernel {
        Some(k) => k.clone(),
        None => {
            let mut with_spec: Vec<&String> = analysis.launch_specs.keys().collect();
            with_spec.sort();
            match with_spec.as_slice() {
                [one] => (*one).clone(),
                [] => {
                    return Err(prepare_error(
                        &src.path,
                        "no kernel has a launch spec: add `// kernelpro:` lines above one (see the README's launch-spec section)",
                    ));
                }
                many => {
                    return Err(prepare_error(
                        &src.path,
                        format!(
                            "several kernels have launch specs ({}): pick one with --kernel",
                            many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
        }
    };
    if analysis.source.kernel(&kernel).is_none() {
        return Err(prepare_error(&src.path, format!("no __global__ function named `{kernel}`")));
    }
    if let Some(e) = analysis.findings.iter().find(|f| {
        f.source == "spec"
            && f.kernel.as_deref() == Some(kernel.as_str())
            && f.severity == kernelpro_model::Severity::Error
    }) {
        return Err(prepare_error(
            &src.path,
            format!("the launch spec of `{kernel}` has an error on line {}: {}", e.span.start.line + 1, e.message),
        ));
    }
    let launch = analysis.launch_specs.get(&kernel).cloned().ok_or_else(|| {
        prepare_error(&src.path, format!("`{kernel}` has no launch spec: add `// kernelpro:` lines directly above it"))
    })?;
    let wanted = launch.instantiate.as_ref().map(|i| i.text());
    if compiled_entry(&analysis, &kernel, wanted.as_deref()).is_none()
        && let Some(inst) = &wanted
    {
        // A template the file never launches: the spec's `instantiate` says
        // which version to run; referencing it from host code makes nvcc
        // compile it (the line goes last, so no line moves).
        let text = format!(
            "{}\nstatic void* const kernelpro_instantiate_{kernel} = (void*)&{inst};\n",
            src.text.trim_end_matches('\n')
        );
        analysis = analyze(text).await.map_err(|e| prepare_error(&src.path, e))?;
        // nvcc checks a template's body only where it is instantiated: its errors show here first
        // (without this, a failed instantiation read as "nvcc produced no cubin").
        if let Some(e) =
            analysis.findings.iter().find(|f| f.severity == kernelpro_model::Severity::Error && f.source != "spec")
        {
            return Err(prepare_error(
                &src.path,
                format!("does not compile as {inst}: line {}: {}", e.span.start.line + 1, e.message),
            ));
        }
    }
    let compiled = analysis
        .compile
        .clone()
        .ok_or_else(|| prepare_error(&src.path, "was not compiled (is nvcc installed? see `kernelpro doctor`)"))?;
    let cubin = compiled.cubin.clone().ok_or_else(|| prepare_error(&src.path, "nvcc produced no cubin"))?;
    let function = compiled_entry(&analysis, &kernel, wanted.as_deref()).ok_or_else(|| {
        prepare_error(&src.path, format!("`{kernel}` is not in the compiled code (a template needs `// kernelpro: instantiate = {kernel}<…>` or an explicit instantiation)"))
    })?;
    let dir = tempfile::Builder::new().prefix("kernelpro-run-").tempdir().map_err(|e| prepare_error(&src.path, e))?;
    let cubin_path = dir.path().join("kernel.cubin");
    std::fs::write(&cubin_path, cubin).map_err(|e| prepare_error(&src.path, e))?;
    Ok(Prepared { job: KernelJob { image: Image::Cubin(cubin_path), function, launch }, analysis, _dir: dir })
}

/// The mangled symbol of `kernel` in the cubin: the one instantiation `wanted`
/// names (spaces ignored), else the only compiled version of it.
fn compiled_entry(analysis: &FileAnalysis, kernel: &str, wanted: Option<&str>) -> Option<String> {
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let all: Vec<_> = analysis
        .compile
        .as_ref()?
        .resources
        .iter()
        .filter(|r| r.entry && kernelpro_sass::symbol::plain_name(&r.name) == kernel)
        .collect();
    let pick = match wanted {
        Some(w) if all.len() > 1 || all.iter().any(|r| r.name != kernel) => {
            all.iter().find(|r| squash(&r.name) == squash(w)).or(if all.len() == 1 { all.first() } else { None })
        }
        _ if all.len() == 1 => all.first(),
        _ => None,
    };
    pick.map(|r| r.mangled.clone())
}

/// How a search's jobs differ from a plain run's (the default is a plain run).
#[derive(Debug, Clone, PartialEq)]
pub struct JobTuning {
    /// Time the reference too ([`kernelpro_gpu::Job::time_reference`]).
    pub time_reference: bool,
    /// Time a kernel whose outputs were wrong ([`kernelpro_gpu::Job::time_if_wrong`]).
    pub time_if_wrong: bool,
    /// About how long the timed launches of one kernel may take.
    pub timing_budget_ms: u32,
    /// The kernels' timeout instead of the settings' `run_timeout_secs`, when shorter
    /// (a search's deadline leaves less).
    pub timeout: Option<Duration>,
}

impl Default for JobTuning {
    fn default() -> Self {
        JobTuning {
            time_reference: true,
            time_if_wrong: true,
            timing_budget_ms: kernelpro_gpu::TIMING_BUDGET_MS as u32,
            timeout: None,
        }
    }
}

/// Runs a prepared kernel (and reference) in the worker child.
/// The jobs' cubins must outlive the call (keep their `Prepared` alive).
pub async fn run(
    kernel: &KernelJob,
    reference: Option<&KernelJob>,
    settings: &Settings,
    opts: &RunOptions,
) -> Result<JobResult, HarnessError> {
    run_tuned(kernel, reference, settings, opts, &JobTuning::default()).await
}

/// The window over which a job measures energy (none when not asked).
pub fn energy_window_ms(energy: bool) -> u32 {
    if energy { 1000 } else { 0 }
}

/// How long one job (one-shot or in a search's long-lived worker) may take: the kernels get the
/// run timeout (or the tuning's, if shorter); energy adds its window, and the buffers' set-up
/// (filled and compared on the GPU) `setup` in proportion to their bytes.
pub fn job_timeout(settings: &Settings, energy: bool, tuning: &JobTuning, setup: Duration) -> Duration {
    let kernels = Duration::from_secs(settings.run_timeout_secs.max(1));
    let kernels = tuning.timeout.map_or(kernels, |t| t.min(kernels));
    kernels + if energy { Duration::from_secs(3) } else { Duration::ZERO } + setup
}

/// [`run`] with a search's tuning.
pub async fn run_tuned(
    kernel: &KernelJob,
    reference: Option<&KernelJob>,
    settings: &Settings,
    opts: &RunOptions,
    tuning: &JobTuning,
) -> Result<JobResult, HarnessError> {
    let job = Job {
        device: opts.device,
        kernel: kernel.clone(),
        reference: reference.cloned(),
        warmup: opts.warmup,
        runs: opts.runs,
        flush_l2: true,
        energy_window_ms: energy_window_ms(opts.energy),
        time_reference: tuning.time_reference,
        time_if_wrong: tuning.time_if_wrong,
        timing_budget_ms: tuning.timing_budget_ms,
    };
    let timeout = job_timeout(settings, opts.energy, tuning, job.setup_allowance());
    // The runner takes a place under the job limit shared with compiles, and
    // kills the worker's group when `opts.cancel` fires or this future is dropped.
    run_job(&opts.exe, &job, timeout, &settings.runner, &opts.cancel).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A template whose body fails only where the spec's `instantiate` compiles it says so, with
    /// nvcc's message (it read "nvcc produced no cubin").
    #[test]
    fn a_template_failing_where_instantiated_says_why() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let text = "// kernelpro: grid = 1\n// kernelpro: block = 32\n// kernelpro: instantiate = k<float>\n// kernelpro: y = out float[32]\ntemplate <typename T>\n__global__ void k(T* y) { y[threadIdx.x] = T::missing; }\n";
        let src = KernelSource { path: dir.path().join("k.cu"), text: text.into(), kernel: Some("k".into()) };
        let settings = Settings { trusted: true, ..Default::default() };
        let result = rt.block_on(prepare(&src, &settings, &Analyzer::default(), &CancellationToken::new()));
        let Err(why) = result else { panic!("a template that cannot be instantiated was prepared") };
        assert!(why.contains("does not compile as k<float>: line 6:"), "{why}");
    }
}
