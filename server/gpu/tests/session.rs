//! The long-lived worker's session protocol on the CPU: the
//! `kernelpro-gpu-emulate` binary serves it through the same `serve` as
//! `kernelpro __gpu-worker`, with an emulated backend (src/bin). What is
//! checked: one process and one run of the original per input seed serve
//! every candidate; wrong outputs come back as a comparison; a fault, a crash
//! or a hang ends that worker (with the error a user reads) and the next
//! candidate gets a fresh one; a cancel ends it at once.

use kernelpro_gpu::{Evaluation, HarnessError, Image, KernelJob, Open, WorkerSession};
use kernelpro_spec::{DEFAULT_SEED, LaunchSpec};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn kernel(function: &str, seed: u64) -> KernelJob {
    let launch = LaunchSpec {
        kernel: "k".into(),
        grid: [1, 1, 1],
        block: [32, 1, 1],
        smem: 0,
        args: Vec::new(),
        check: None,
        seed,
        tunables: Vec::new(),
        instantiate: None,
        op: None,
        lets: Default::default(),
    };
    KernelJob { image: Image::Ptx(".version 8.0".into()), function: function.into(), launch }
}

fn evaluation(function: &str, seed: u64) -> Evaluation {
    Evaluation {
        kernel: kernel(function, seed),
        compare: true,
        warmup: 3,
        runs: 20,
        energy_window_ms: 0,
        time_reference: false,
        time_if_wrong: false,
        timing_budget_ms: 500,
    }
}

fn session(test: &str, original: &str) -> WorkerSession {
    // A prefix of its own, so that its device lock is not shared with other tests' sessions.
    let prefix = vec!["env".to_string(), format!("KERNELPRO_SESSION_TEST={test}")];
    let open = Open { device: 0, reference: kernel(original, DEFAULT_SEED), flush_l2: true };
    WorkerSession::with_command(&prefix, vec![env!("CARGO_BIN_EXE_kernelpro-gpu-emulate").to_string()], open)
}

/// (pid, evaluations served by that process, runs of the original) from the emulation's device name.
fn served(name: &str) -> (u32, u32, u32) {
    let field = |k: &str| -> u32 {
        name.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name}"))
    };
    (field("pid="), field("evaluations="), field("original_runs="))
}

const T: Duration = Duration::from_secs(10);

#[tokio::test]
async fn one_worker_serves_every_candidate_and_runs_the_original_once_per_seed() {
    let mut s = session("one_worker_serves_every_candidate_and_runs_the_original_once_per_seed", "original");
    let cancel = CancellationToken::new();
    let mut pids = Vec::new();
    for (i, f) in ["ms_0.5", "ms_0.25", "ms_2", "ms_0.125"].iter().enumerate() {
        let r = s.evaluate(&evaluation(f, DEFAULT_SEED), T, &cancel).await.unwrap();
        assert_eq!(r.kernel.timing.median_ms, f[3..].parse::<f64>().unwrap());
        assert!(r.correct());
        let (pid, n, originals) = served(&r.device_name);
        assert_eq!((n, originals), (i as u32 + 1, 1), "{}", r.device_name);
        pids.push(pid);
    }
    // A held-out seed: the original runs once more, in the same process.
    let r = s.evaluate(&evaluation("ms_0.5", DEFAULT_SEED + 1), T, &cancel).await.unwrap();
    pids.push(served(&r.device_name).0);
    assert_eq!(served(&r.device_name).2, 2);
    pids.dedup();
    assert_eq!(pids.len(), 1, "one process for the whole session");
    assert_eq!(s.starts, 1);
    s.stop().await;
}

#[tokio::test]
async fn a_wrong_candidate_is_reported_and_the_worker_goes_on() {
    let mut s = session("a_wrong_candidate_is_reported_and_the_worker_goes_on", "original");
    let cancel = CancellationToken::new();
    let r = s.evaluate(&evaluation("wrong", DEFAULT_SEED), T, &cancel).await.unwrap();
    assert!(!r.correct());
    let r = s.evaluate(&evaluation("ms_0.5", DEFAULT_SEED), T, &cancel).await.unwrap();
    assert!(r.correct());
    assert_eq!(served(&r.device_name).1, 2);
    assert_eq!(s.starts, 1);
}

#[tokio::test]
async fn a_faulting_candidate_ends_its_worker_and_the_next_gets_a_fresh_one() {
    let mut s = session("a_faulting_candidate_ends_its_worker_and_the_next_gets_a_fresh_one", "original");
    let cancel = CancellationToken::new();
    let first = s.evaluate(&evaluation("ms_0.5", DEFAULT_SEED), T, &cancel).await.unwrap();
    let err = s.evaluate(&evaluation("fail", DEFAULT_SEED), T, &cancel).await.unwrap_err();
    assert!(matches!(err, HarnessError::Worker(_)), "{err:?}");
    assert!(err.to_string().contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{err}");
    assert!(!s.is_live());
    let next = s.evaluate(&evaluation("ms_0.5", DEFAULT_SEED), T, &cancel).await.unwrap();
    assert_ne!(served(&first.device_name).0, served(&next.device_name).0);
    // The new worker ran the original again (its context is new).
    assert_eq!(served(&next.device_name).1..=served(&next.device_name).2, 1..=1);
    assert_eq!(s.starts, 2);

    let err = s.evaluate(&evaluation("crash", DEFAULT_SEED), T, &cancel).await.unwrap_err();
    assert!(matches!(err, HarnessError::Crashed { .. }), "{err:?}");
    assert!(err.to_string().starts_with("the GPU worker died"), "{err}");
    assert!(s.evaluate(&evaluation("ms_1", DEFAULT_SEED), T, &cancel).await.is_ok());
    assert_eq!(s.starts, 3);
}

#[tokio::test]
async fn a_hanging_candidate_times_out_and_a_cancel_ends_the_worker_at_once() {
    let mut s = session("a_hanging_candidate_times_out_and_a_cancel_ends_the_worker_at_once", "original");
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let err = s.evaluate(&evaluation("hang", DEFAULT_SEED), Duration::from_millis(500), &cancel).await.unwrap_err();
    assert!(matches!(err, HarnessError::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!s.is_live());
    assert!(s.evaluate(&evaluation("ms_1", DEFAULT_SEED), T, &cancel).await.is_ok());

    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c2.cancel();
    });
    let started = Instant::now();
    let err = s.evaluate(&evaluation("hang", DEFAULT_SEED), Duration::from_secs(30), &cancel).await.unwrap_err();
    assert!(matches!(err, HarnessError::Cancelled), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(!s.is_live());
}

#[tokio::test]
async fn a_gpu_that_cannot_be_opened_says_why() {
    let mut s = session("a_gpu_that_cannot_be_opened_says_why", "fail_open");
    let err = s.evaluate(&evaluation("ms_1", DEFAULT_SEED), T, &CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.to_string(), "emulated: the GPU could not be opened");
}
