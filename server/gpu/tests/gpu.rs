//! GPU tests: run on a machine with an NVIDIA GPU and nvcc with
//! `cargo test -p kernelpro-gpu --test gpu -- --ignored --test-threads=1 --nocapture`.
//! The test binary doubles as the worker (see `worker_entry`), reached through
//! a runner prefix the way `srun`/`ssh` would be.

use kernelpro_gpu::*;
use kernelpro_spec::{KernelSignature, Param, ResolveOptions, parse_file, resolve};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const SOURCE: &str = include_str!("kernels.cu");

#[test]
#[ignore = "needs a GPU"]
fn worker_entry() {
    if std::env::var_os("KERNELPRO_GPU_WORKER").is_some() {
        std::process::exit(worker_main());
    }
}

/// The runner prefix that turns this test binary into `kernelpro __gpu-worker`.
fn runner() -> Vec<String> {
    let script = "KERNELPRO_GPU_WORKER=1 exec \"$0\" worker_entry --exact --ignored --nocapture --test-threads=1";
    vec!["sh".into(), "-c".into(), script.into()]
}

fn compile(out: &Path) -> Duration {
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let arch = std::env::var("KERNELPRO_TEST_ARCH").unwrap_or_else(|_| "sm_90".into());
    // The source travels inside the binary, so the test runs from any directory.
    let source = out.with_extension("cu");
    std::fs::write(&source, SOURCE).unwrap();
    let start = Instant::now();
    let status = Command::new(&nvcc).args(["-cubin", &format!("-arch={arch}"), "-O3", "-o"]).arg(out).arg(&source).status().expect("nvcc runs");
    assert!(status.success(), "nvcc failed");
    start.elapsed()
}

fn cubin() -> &'static PathBuf {
    static CUBIN: OnceLock<PathBuf> = OnceLock::new();
    CUBIN.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("kernelpro-gpu-tests-{}.cubin", std::process::id()));
        compile(&path);
        path
    })
}

/// The signature of `name` read from its declaration in kernels.cu.
fn signature(name: &str) -> KernelSignature {
    let decl = SOURCE.split(&format!("void {name}(")).nth(1).expect("kernel declared");
    let params = decl[..decl.find(')').unwrap()]
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let p = p.trim();
            let split = p.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap();
            let ty = p[..=split].trim();
            Param { name: p[split + 1..].into(), ty: ty.trim_end_matches('*').trim().into(), pointer: ty.ends_with('*') }
        })
        .collect();
    KernelSignature { name: name.into(), params }
}

fn kernel(name: &str) -> KernelJob {
    let specs = parse_file(SOURCE);
    let spec = specs.kernel(name).expect("kernel has a spec");
    let launch = resolve(spec, &specs.file_lets, &signature(name), &ResolveOptions::default()).expect("spec resolves");
    KernelJob { image: Image::Cubin(cubin().clone()), function: name.into(), launch }
}

fn job(name: &str, reference: Option<&str>) -> Job {
    Job { reference: reference.map(kernel), energy_window_ms: 0, ..Job::new(kernel(name)) }
}

fn run(job: &Job, timeout: Duration) -> Result<JobResult, HarnessError> {
    run_job(&std::env::current_exe().unwrap(), job, timeout, &runner())
}

fn show(label: &str, r: &KernelRun) {
    let t = &r.timing;
    println!(
        "{label}: {} median {:.4} ms (min {:.4}, max {:.4}, sd {:.4}, {} runs), ~{:.0} GB/s, clocks {:?}, energy {:?}",
        r.function, t.median_ms, t.min_ms, t.max_ms, t.stddev_ms, t.runs, r.dram_gbps_estimate, r.clocks, r.energy
    );
}

#[test]
#[ignore = "needs a GPU"]
fn saxpy_matches_its_reference() {
    let job = Job { energy_window_ms: 1000, ..job("saxpy", Some("saxpy_stride")) };
    let result = run(&job, DEFAULT_TIMEOUT).unwrap();
    println!("device: {} sm_{}{}", result.device_name, result.compute_capability.0, result.compute_capability.1);
    show("saxpy", &result.kernel);
    show("reference", result.reference.as_ref().unwrap());
    println!("comparison: {:?}", result.comparison);
    assert!(result.correct());
    assert_eq!(result.kernel.outputs[0].unwritten, 0);
    assert_eq!(result.kernel.outputs[0].hash, result.reference.unwrap().outputs[0].hash);
}

#[test]
#[ignore = "needs a GPU"]
fn a_wrong_variant_is_caught_with_its_worst_element() {
    let result = run(&job("saxpy_wrong", Some("saxpy")), DEFAULT_TIMEOUT).unwrap();
    println!("comparison: {:?}", result.comparison);
    assert!(!result.correct());
    let c = &result.comparison[0];
    assert_eq!(c.bad, 1);
    assert_eq!(c.worst.as_ref().unwrap().index, 12345);
}

#[test]
#[ignore = "needs a GPU"]
fn a_hung_kernel_is_killed() {
    let start = Instant::now();
    let err = run(&job("hang", None), Duration::from_secs(3)).unwrap_err();
    println!("hang: {err} (returned after {:.1} s)", start.elapsed().as_secs_f64());
    assert!(matches!(err, HarnessError::Timeout { .. }));
}

#[test]
#[ignore = "needs a GPU"]
fn an_out_of_bounds_kernel_is_reported() {
    let err = run(&job("oob", None), DEFAULT_TIMEOUT).unwrap_err();
    println!("oob: {err}");
    assert!(err.to_string().contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{err}");
}

#[test]
#[ignore = "needs a GPU"]
fn copy_timings_are_stable_across_runs() {
    let job = job("copy4", None);
    let (a, b) = (run(&job, DEFAULT_TIMEOUT).unwrap().kernel, run(&job, DEFAULT_TIMEOUT).unwrap().kernel);
    show("copy4 run 1", &a);
    show("copy4 run 2", &b);
    let spread = (a.timing.median_ms - b.timing.median_ms).abs() / a.timing.median_ms;
    println!("copy4 bytes moved {} MiB, run-to-run difference {:.2}%", (2 * (1 << 26) * 4) >> 20, spread * 100.0);
    assert!(spread < 0.05, "medians differ by {:.1}%", spread * 100.0);
}

#[test]
#[ignore = "needs a GPU"]
fn overhead_of_one_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let compile_time = compile(&dir.path().join("k.cubin"));
    let job = job("saxpy", Some("saxpy_stride"));
    let run_start = Instant::now();
    let result = run(&job, DEFAULT_TIMEOUT).unwrap();
    let run_time = run_start.elapsed();
    println!(
        "evaluation: compile {:.2} s + load/fill/run/compare/time {:.2} s = {:.2} s (correct: {})",
        compile_time.as_secs_f64(),
        run_time.as_secs_f64(),
        start.elapsed().as_secs_f64(),
        result.correct()
    );
}
