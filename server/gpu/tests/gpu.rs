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

// The harness's kernels and the float-atomic sums that the end-to-end tests run too.
const SOURCE: &str =
    concat!(include_str!("kernels.cu"), "\n", include_str!("../../../tests/fixtures/gpu/atomic_sum.cu"));

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
    let status = Command::new(&nvcc)
        .args(["-cubin", &format!("-arch={arch}"), "-O3", "-o"])
        .arg(out)
        .arg(&source)
        .status()
        .expect("nvcc runs");
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
            Param {
                name: p[split + 1..].into(),
                ty: ty.trim_end_matches('*').trim().into(),
                pointer: ty.ends_with('*'),
            }
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
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(run_job(&std::env::current_exe().unwrap(), job, timeout, &runner(), &Default::default()))
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

/// A search's long-lived worker: one process opens the GPU and runs the
/// original once per seed; candidates are checked and timed back to back, each
/// far quicker than a one-shot job; a faulting kernel ends its worker and the
/// next evaluation starts a fresh one.
#[test]
#[ignore = "needs a GPU"]
fn a_session_evaluates_candidates_back_to_back() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let exe = std::env::current_exe().unwrap();
    let cancel = Default::default();
    let evaluation = |name: &str, seed: u64| {
        let mut kernel = kernel(name);
        kernel.launch.seed = seed;
        Evaluation {
            kernel,
            compare: true,
            warmup: 3,
            runs: 20,
            energy_window_ms: 0,
            time_reference: false,
            time_if_wrong: false,
            timing_budget_ms: 500,
        }
    };
    let seed = kernel("saxpy").launch.seed;
    let open = Open { device: 0, reference: kernel("saxpy"), flush_l2: true };
    let mut session = WorkerSession::new(&exe, &runner(), open);
    let one_shot = Instant::now();
    run(&job("saxpy_stride", Some("saxpy")), DEFAULT_TIMEOUT).unwrap();
    let one_shot = one_shot.elapsed();
    let mut times = Vec::new();
    for (name, seed, correct) in [
        ("saxpy_stride", seed, true),
        ("saxpy", seed, true),
        ("saxpy_wrong", seed, false),
        ("saxpy_stride", seed, true),
        ("saxpy_stride", seed + 1, true),
    ] {
        let t = Instant::now();
        let r = runtime.block_on(session.evaluate(&evaluation(name, seed), DEFAULT_TIMEOUT, &cancel)).unwrap();
        times.push(t.elapsed().as_secs_f64());
        assert_eq!(r.correct(), correct, "{name}: {:?}", r.comparison);
        if correct {
            assert!(r.kernel.timing.runs >= 20 && r.kernel.timing.median_ms > 0.0, "{name}: {:?}", r.kernel.timing);
        } else {
            assert_eq!(r.kernel.timing.runs, 0, "a wrong candidate is not timed");
        }
        println!("session {name} seed {seed}: {:.3} s, phases {:?}", t.elapsed().as_secs_f64(), r.phases);
    }
    println!("one-shot job {:.3} s; session evaluations {times:?}", one_shot.as_secs_f64());
    assert_eq!(session.starts, 1, "one worker for every candidate");
    // The first evaluation opens the GPU and runs the original; the next ones do neither.
    assert!(times[3] < one_shot.as_secs_f64() / 2.0, "{times:?} vs one-shot {one_shot:?}");

    let open = Open { device: 0, reference: kernel("oob"), flush_l2: true };
    let mut faulting = WorkerSession::new(&exe, &runner(), open);
    for _ in 0..2 {
        let mut e = evaluation("oob", seed);
        e.compare = false;
        let err = runtime.block_on(faulting.evaluate(&e, DEFAULT_TIMEOUT, &cancel)).unwrap_err();
        assert!(err.to_string().contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{err}");
        assert!(!faulting.is_live());
    }
    assert_eq!(faulting.starts, 2, "a fresh worker after a fault");
    runtime.block_on(session.stop());
}

/// The device fill is the host fill, bit for bit, for every element type and
/// init (extreme ranges included: half overflow, the whole i64 range), and the
/// device checksum is the host's (the same hash; sums added in another order).
#[test]
#[ignore = "needs a GPU"]
fn the_device_fill_and_checksum_equal_the_hosts() {
    use kernelpro_spec::{Arg, BufferArg, Dir, ElemType, Init};
    let count = (1 << 20) + 17;
    let mut buffers = Vec::new();
    for elem in [
        ElemType::Float,
        ElemType::Double,
        ElemType::Half,
        ElemType::Bfloat16,
        ElemType::Int,
        ElemType::Unsigned,
        ElemType::Int8,
        ElemType::Uint8,
        ElemType::Int64,
    ] {
        for (init, dir) in [
            (Init::Uniform { lo: -2.0, hi: 2.0 }, Dir::Inout),
            (Init::Uniform { lo: -1e5, hi: 1e5 }, Dir::Inout),
            (Init::Randint { lo: -300, hi: 300 }, Dir::Inout),
            (Init::Randint { lo: i64::MIN, hi: i64::MAX }, Dir::Inout),
            (Init::Iota, Dir::Inout),
            (Init::Fill { value: -1.5 }, Dir::Inout),
            (Init::Zeros, Dir::Out),
        ] {
            buffers.push(BufferArg { name: format!("{} {init:?} {dir:?}", elem.spec_name()), dir, elem, count, init });
        }
    }
    let mut launch = kernel("saxpy").launch;
    launch.kernel = "noop".into();
    (launch.grid, launch.block) = ([1, 1, 1], [32, 1, 1]);
    launch.args = buffers.iter().cloned().map(Arg::Buffer).collect();
    let job = Job {
        energy_window_ms: 0,
        runs: 20,
        ..Job::new(KernelJob { image: Image::Cubin(cubin().clone()), function: "noop".into(), launch: launch.clone() })
    };
    let result = run(&job, DEFAULT_TIMEOUT).unwrap();
    println!("{} buffers of {count} elements: phases {:?}", buffers.len(), result.phases);
    for (i, (b, got)) in buffers.iter().zip(&result.kernel.outputs).enumerate() {
        let want = checksum(b, &fill(b, launch.seed, i));
        assert_eq!((&got.hash, got.unwritten), (&want.hash, want.unwritten), "{}", b.name);
        // Both NaN: +inf and -inf among the values (half overflows).
        // Sums in another order differ by at most count × eps × Σ|x| (about 1e-10 of it here).
        let close =
            |x: f64, y: f64| (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-9 * want.abs_sum.max(1.0);
        assert!(close(got.sum, want.sum) && close(got.abs_sum, want.abs_sum), "{}: {got:?} vs {want:?}", b.name);
    }
}

/// The device comparison counts and picks the worst element as the host's does.
#[test]
#[ignore = "needs a GPU"]
fn the_device_comparison_equals_the_hosts() {
    let job = job("leave_alone", Some("perturb_ulps"));
    let result = run(&job, DEFAULT_TIMEOUT).unwrap();
    let launch = &job.kernel.launch;
    let b = launch.buffers().next().unwrap();
    let fresh = fill(b, launch.seed, 0);
    // perturb_ulps on the host.
    let perturbed: Vec<u8> = fresh
        .chunks(4)
        .enumerate()
        .flat_map(|(i, c)| {
            let bits = if i == 777 {
                0x7fc0_0000
            } else {
                i32::from_le_bytes(c.try_into().unwrap()).wrapping_add((i % 7) as i32 * 150) as u32
            };
            bits.to_le_bytes()
        })
        .collect();
    let want = compare(b, launch.tolerance_for(b.elem), &perturbed, &fresh);
    println!("device: {:?}\nhost:   {want:?}", result.comparison[0]);
    assert!(want.bad > 1000, "the perturbation must fail some elements");
    // As text: the worst element's reference is the planted NaN, which is not equal to itself.
    assert_eq!(format!("{:?}", result.comparison[0]), format!("{want:?}"));
}

/// 4 GiB of buffers are set up on the GPU in well under the default run
/// timeout (a host fill and copy of them took longer than all of it).
#[test]
#[ignore = "needs a GPU"]
fn a_4_gib_buffer_runs_under_the_default_timeout() {
    let job = Job { runs: 20, ..job("scale_4g", Some("scale_4g")) };
    println!(
        "buffers: {:.2} GiB; the harness adds {:.1} s to the run timeout for them",
        job.buffer_bytes() as f64 / (1u64 << 30) as f64,
        job.setup_allowance().as_secs_f64()
    );
    let start = Instant::now();
    // The plain default timeout, without the allowance: set-up must fit anyway.
    let result = run(&job, DEFAULT_TIMEOUT).unwrap();
    let p = &result.phases;
    println!(
        "scale_4g with itself as reference: wall {:.2} s; set-up (context, code, 4 GiB + the saved copy) {:.0} ms, fills {:.0} ms, checks {:.0} ms, timing {:.0} ms; kernel median {:.3} ms",
        start.elapsed().as_secs_f64(),
        p.setup_ms,
        p.fill_ms,
        p.verify_ms,
        p.timing_ms,
        result.kernel.timing.median_ms
    );
    assert!(result.correct(), "{:?}", result.comparison);
    assert_eq!(result.comparison[0].original_variation, None, "a deterministic kernel");
    assert_eq!(result.kernel.outputs[0].hash, result.reference.as_ref().unwrap().outputs[0].hash);
    let host = Instant::now();
    let b = job.kernel.launch.buffers().next().unwrap();
    let sample = kernelpro_spec::BufferArg { count: 1 << 26, ..b.clone() };
    let _ = fill(&sample, 42, 0);
    println!(
        "for comparison, the host fill makes 256 MiB in {:.2} s (4 GiB: ~{:.0} s)",
        host.elapsed().as_secs_f64(),
        host.elapsed().as_secs_f64() * 16.0
    );
}

/// A float-atomic sum differs from run to run; the harness measures that and
/// accepts a block-reduced version within 8x of it, but not a wrong one.
#[test]
#[ignore = "needs a GPU"]
fn a_float_atomic_original_is_measured_and_a_block_reduced_candidate_verifies() {
    let itself = run(&job("sum_atomic", Some("sum_atomic")), DEFAULT_TIMEOUT).unwrap();
    println!("sum_atomic vs itself: {:?}", itself.nondeterminism_notes());
    let c = &itself.comparison[0];
    let v = c.original_variation.expect("the original is nondeterministic");
    println!("  compared within {}", c.tolerance_note());
    assert_eq!(c.basis, ToleranceBasis::OriginalVariation);
    assert!(v.max_abs_diff > 0.0 && c.atol == VARIATION_MULTIPLE * v.max_abs_diff);

    {
        let seed_job = job("sum_blocks", Some("sum_atomic"));
        let r = run(&seed_job, DEFAULT_TIMEOUT).unwrap();
        let c = &r.comparison[0];
        println!(
            "sum_blocks vs sum_atomic: {} (candidate {:.6}, original {:.6}); {:.2}x faster",
            c.tolerance_note(),
            r.kernel.outputs[0].sum,
            r.reference.as_ref().unwrap().outputs[0].sum,
            r.reference.as_ref().unwrap().timing.median_ms / r.kernel.timing.median_ms
        );
        assert!(r.correct(), "{:?}", r.comparison);
        assert!(!r.nondeterminism_notes().is_empty());
    }
    let wrong = run(&job("sum_blocks_short", Some("sum_atomic")), DEFAULT_TIMEOUT).unwrap();
    println!("sum_blocks_short vs sum_atomic: {:?}", wrong.comparison[0]);
    assert!(!wrong.correct(), "skipping 1/64 of the input must fail");
}

/// Runs without a GPU: every kernel the GPU tests launch has a spec that resolves.
#[test]
fn every_test_kernel_resolves() {
    for name in [
        "saxpy",
        "saxpy_stride",
        "saxpy_wrong",
        "hang",
        "oob",
        "copy4",
        "scale_4g",
        "sum_atomic",
        "sum_blocks",
        "sum_blocks_short",
        "perturb_ulps",
        "leave_alone",
    ] {
        let specs = parse_file(SOURCE);
        let spec = specs.kernel(name).unwrap_or_else(|| panic!("{name} has a spec"));
        let launch = resolve(spec, &specs.file_lets, &signature(name), &ResolveOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert!(launch.buffers().count() > 0, "{name}");
    }
}
