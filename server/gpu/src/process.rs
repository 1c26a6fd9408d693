//! The parent side: runs a job in a child process (`kernelpro __gpu-worker`)
//! so that faults, hangs and driver errors cannot take the server down. The
//! child runs through the one runner (`kernelpro_runner::run_tool`): its own
//! process group, a timeout, the caller's cancellation token, capped output, no
//! API keys in its environment, and the group killed if the caller's future is
//! dropped.

use crate::job::{Job, JobResult};
use kernelpro_runner::{ToolCommand, ToolError, run_tool};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The hidden subcommand that runs [`crate::worker_main`].
pub const WORKER_SUBCOMMAND: &str = "__gpu-worker";
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the worker writes on stdout, one JSON line.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Reply {
    Done(Box<JobResult>),
    Failed(String),
}

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(
        "could not start the GPU worker `{command}`: {message}; check the runner setting and that the program exists on the GPU machine"
    )]
    Spawn { command: String, message: String },
    #[error(
        "the GPU work did not finish within {} s and was killed: the kernel may never end (check loop bounds, and `__syncthreads()` or spin-waits in divergent code), or it is just slow: raise the timeout setting",
        .after.as_secs_f64()
    )]
    Timeout { after: Duration },
    #[error("the GPU work was cancelled")]
    Cancelled,
    #[error("the GPU worker died ({status}) without a result{}", tail_note(.stderr))]
    Crashed { status: String, stderr: String },
    /// A message from the worker: no driver, a load or launch error, a fault in the kernel.
    #[error("{0}")]
    Worker(String),
}

fn tail_note(stderr: &str) -> String {
    let tail: Vec<&str> = stderr.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
    if tail.is_empty() { String::new() } else { format!(": {}", tail.join("\n")) }
}

/// Runs `job` in `runner_prefix... exe __gpu-worker` (the job on stdin, the
/// reply on stdout), killing the child's whole process group when `timeout`
/// passes or `cancel` fires. Jobs on the same device run one at a time, across
/// processes too ([`DeviceLock`]); the timeout starts once the device is ours.
pub async fn run_job(
    exe: &Path,
    job: &Job,
    timeout: Duration,
    runner_prefix: &[String],
    cancel: &CancellationToken,
) -> Result<JobResult, HarnessError> {
    let mut argv: Vec<String> = runner_prefix.to_vec();
    argv.push(exe.to_string_lossy().into_owned());
    argv.push(WORKER_SUBCOMMAND.to_string());
    let input = serde_json::to_vec(job).expect("a job always serializes");
    let command = ToolCommand::new(&argv[0], timeout).args(&argv[1..]).stdin(input);
    let _device = tokio::select! {
        lock = DeviceLock::acquire(runner_prefix, job.device) => lock,
        () = cancel.cancelled() => return Err(HarnessError::Cancelled),
    };
    let out = run_tool(&command, cancel).await.map_err(|e| match e {
        ToolError::Timeout { .. } => HarnessError::Timeout { after: timeout },
        ToolError::Cancelled { .. } => HarnessError::Cancelled,
        ToolError::NotFound { .. } | ToolError::NotExecutable { .. } | ToolError::Spawn { .. } => {
            HarnessError::Spawn { command: argv.join(" "), message: e.to_string() }
        }
        ToolError::Flood { .. } => HarnessError::Worker(format!("the GPU worker's output was cut off: {e}")),
    })?;
    match parse_reply(&out.stdout) {
        Ok(Reply::Done(result)) => Ok(*result),
        Ok(Reply::Failed(message)) => Err(HarnessError::Worker(message)),
        Err(Some(e)) if out.success() => Err(HarnessError::Worker(format!(
            "the GPU worker finished but its reply could not be read ({e}); the worker and the server are different versions, or this is a KernelPro bug"
        ))),
        Err(_) => Err(HarnessError::Crashed {
            status: out.code.map_or_else(|| "killed by a signal".to_string(), |c| format!("exit code {c}")),
            stderr: out.stderr,
        }),
    }
}

/// An exclusive `flock` on a file per (runner, device) in the temp directory:
/// two searches timing kernels on one GPU at once slow each other down and
/// each keeps the wrong candidate (or rejects a real gain as noise), so the
/// GPU part of every job is serialized while compiles still run in parallel.
/// The lock goes with the file descriptor, also when the process dies.
/// Without a lock file (a read-only temp directory) jobs run unserialized.
pub(crate) struct DeviceLock {
    _file: Option<std::fs::File>,
}

impl DeviceLock {
    pub(crate) async fn acquire(runner_prefix: &[String], device: u32) -> DeviceLock {
        let path = std::env::temp_dir().join(format!("kernelpro-gpu-{}-{device}.lock", runner_key(runner_prefix)));
        // A blocking flock on a thread of its own; if the caller gives up, the
        // thread still gets the lock and releases it at once by dropping it.
        let lock = tokio::task::spawn_blocking(move || {
            use std::os::fd::AsRawFd;
            let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).ok()?;
            // SAFETY: flock on a descriptor this function owns.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            (rc == 0).then_some(file)
        });
        DeviceLock { _file: lock.await.ok().flatten() }
    }
}

/// A name for the runner prefix that every kernelpro build computes alike (std's hasher may
/// differ between builds, and two builds on one machine must share the lock): 16 hex digits of
/// the SHA-256 of its words.
fn runner_key(runner_prefix: &[String]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for w in runner_prefix {
        h.update(w.as_bytes());
        h.update([0]);
    }
    h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The last stdout line that ends in a reply; runners (ssh banners, srun) may
/// print before it, even on the same line.
/// The last line of stdout that reads as a reply; otherwise why the last
/// JSON-looking line did not read (`None`: there was none).
fn parse_reply(stdout: &str) -> Result<Reply, Option<String>> {
    let mut first_error = None;
    for l in stdout.lines().rev() {
        let Some(at) = l.find('{') else { continue };
        match serde_json::from_str(l[at..].trim()) {
            Ok(reply) => return Ok(reply),
            Err(e) => {
                first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    Err(first_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Image, KernelJob};
    use kernelpro_spec::{DEFAULT_SEED, LaunchSpec};
    use std::os::unix::fs::PermissionsExt;

    fn job() -> Job {
        let launch = LaunchSpec {
            kernel: "k".into(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            smem: 0,
            args: Vec::new(),
            check: None,
            seed: DEFAULT_SEED,
            tunables: Vec::new(),
            instantiate: None,
            op: None,
            lets: Default::default(),
        };
        Job::new(KernelJob { image: Image::Ptx(".version 8.0".into()), function: "k".into(), launch })
    }

    /// The lock's name is the SHA-256 of the runner's words (`printf '/opt/kernelpro\0gpu-worker\0' |
    /// sha256sum`), the same in every build, and word boundaries count.
    #[test]
    fn the_device_lock_name_is_the_same_in_every_build() {
        let words = |ws: &[&str]| ws.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(runner_key(&words(&["/opt/kernelpro", "gpu-worker"])), "d0b114c62195bdd2");
        assert_ne!(runner_key(&words(&["ab", "c"])), runner_key(&words(&["a", "bc"])));
    }

    /// A fake worker: a shell script with `body`.
    fn fake_worker(dir: &Path, body: &str) -> std::path::PathBuf {
        let path = dir.join("worker.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[tokio::test]
    async fn kills_the_whole_group_on_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        let exe = fake_worker(dir.path(), &format!("sleep 30 & echo $! > {}\nwait", pid_file.display()));
        let err = run_job(&exe, &job(), Duration::from_millis(500), &[], &CancellationToken::new()).await.unwrap_err();
        assert!(matches!(err, HarnessError::Timeout { .. }), "{err}");
        assert!(err.to_string().starts_with("the GPU work did not finish within 0.5 s and was killed"));
        let grandchild: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        // The grandchild is gone once init reaps it; poll instead of sleeping a fixed time.
        let gone = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            // SAFETY: signal 0 only checks that the process exists.
            unsafe { libc::kill(grandchild, 0) != 0 }
        });
        assert!(gone, "the sleeping grandchild survived");
    }

    #[tokio::test]
    async fn jobs_on_one_device_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        // Each worker logs its start and end around a pause; overlapping runs would interleave.
        let exe = fake_worker(
            dir.path(),
            &format!(
                "cat > /dev/null; echo start >> {0}; sleep 0.3; echo end >> {0}; echo '{{\"Failed\":\"done\"}}'",
                log.display()
            ),
        );
        let prefix = vec!["env".to_string(), format!("KERNELPRO_LOCK_TEST={}", dir.path().display())];
        let (cancel, job) = (CancellationToken::new(), job());
        let (a, b) = tokio::join!(
            run_job(&exe, &job, DEFAULT_TIMEOUT, &prefix, &cancel),
            run_job(&exe, &job, DEFAULT_TIMEOUT, &prefix, &cancel)
        );
        assert_eq!((a.unwrap_err().to_string(), b.unwrap_err().to_string()), ("done".into(), "done".into()));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "start\nend\nstart\nend\n");
    }

    #[tokio::test]
    async fn reports_a_crash_with_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let exe = fake_worker(dir.path(), "cat > /dev/null; echo 'Segmentation fault' >&2; exit 139");
        let err = run_job(&exe, &job(), DEFAULT_TIMEOUT, &[], &CancellationToken::new()).await.unwrap_err();
        assert_eq!(err.to_string(), "the GPU worker died (exit code 139) without a result: Segmentation fault");
    }

    #[tokio::test]
    async fn passes_the_job_and_reads_the_reply_after_runner_noise() {
        let dir = tempfile::tempdir().unwrap();
        // The reply echoes the job's function name back to prove stdin arrived.
        let exe = fake_worker(
            dir.path(),
            r#"grep -q '"function":"k"' && echo 'Welcome to gpu-box' && echo 'srun: {"Failed":"no CUDA driver here"}'"#,
        );
        let prefix = vec!["env".to_string(), "KERNELPRO_RUNNER=1".to_string()];
        let err = run_job(&exe, &job(), DEFAULT_TIMEOUT, &prefix, &CancellationToken::new()).await.unwrap_err();
        assert_eq!(err.to_string(), "no CUDA driver here");
    }

    #[tokio::test]
    async fn reports_a_runner_that_cannot_start() {
        let err = run_job(Path::new("/nonexistent/kernelpro"), &job(), DEFAULT_TIMEOUT, &[], &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            err.to_string().starts_with("could not start the GPU worker `/nonexistent/kernelpro __gpu-worker`"),
            "{err}"
        );
    }

    #[test]
    fn job_json_round_trips() {
        let j = job();
        let text = serde_json::to_string(&j).unwrap();
        assert_eq!(serde_json::from_str::<Job>(&text).unwrap(), j);
        expect_test::expect![[r#"{"device":0,"kernel":{"image":{"ptx":".version 8.0"},"function":"k","launch":{"kernel":"k","grid":[1,1,1],"block":[32,1,1],"smem":0,"args":[],"check":null,"seed":42,"tunables":[],"instantiate":null,"op":null,"lets":{}}},"reference":null,"warmup":3,"runs":50,"flush_l2":true,"energy_window_ms":1000,"time_reference":true,"time_if_wrong":true,"timing_budget_ms":2000}"#]].assert_eq(&text);
    }

    /// A result a real kernel can produce: outputs summing to NaN and
    /// infinity, a NaN worst element. It must reach the parent intact.
    fn result_with_non_finite_values() -> JobResult {
        use crate::job::{BufferComparison, Checksum, KernelRun, Mismatch, Phases, Timing};
        let run = KernelRun {
            function: "k".into(),
            timing: Timing {
                runs: 20,
                warmup: 3,
                median_ms: 0.5,
                min_ms: 0.4,
                max_ms: f64::INFINITY,
                stddev_ms: f64::NAN,
            },
            clocks: None,
            energy: Err("no NVML".into()),
            outputs: vec![
                Checksum { name: "y".into(), sum: f64::NAN, abs_sum: f64::INFINITY, unwritten: 3, hash: "00".into() },
                Checksum { name: "z".into(), sum: f64::NEG_INFINITY, abs_sum: 1.5, unwritten: 0, hash: "01".into() },
            ],
            dram_gbps_estimate: 12.0,
            tflops: Some(f64::NAN),
        };
        JobResult {
            device_name: "GPU".into(),
            compute_capability: (9, 0),
            kernel: run.clone(),
            reference: Some(run),
            comparison: vec![BufferComparison {
                name: "y".into(),
                rtol: 1e-5,
                atol: 1e-5,
                bad: 1,
                count: 4,
                worst: Some(Mismatch { index: 2, reference: 1.0, got: f64::NAN }),
                spec_rtol: 1e-5,
                spec_atol: 1e-5,
                basis: crate::verify::ToleranceBasis::Spec,
                original_variation: None,
            }],
            phases: Phases::default(),
        }
    }

    #[test]
    fn non_finite_results_cross_the_pipe() {
        let result = result_with_non_finite_values();
        let line = serde_json::to_string(&Reply::Done(Box::new(result.clone()))).unwrap();
        assert!(line.contains(r#""sum":"NaN","abs_sum":"inf""#), "{line}");
        assert!(line.contains(r#""sum":"-inf""#), "{line}");
        // Energy as a plain field and an error field, never serde's `{"Err": …}`.
        assert!(line.contains(r#""energy":null,"energy_error":"no NVML""#) && !line.contains(r#""Err""#), "{line}");
        let Ok(Reply::Done(back)) = parse_reply(&line) else { panic!("unreadable: {line}") };
        // NaN != NaN, so compare the encodings.
        assert_eq!(serde_json::to_string(&back).unwrap(), serde_json::to_string(&result).unwrap());
        assert!(back.kernel.outputs[0].sum.is_nan());
        assert_eq!(back.kernel.outputs[1].sum, f64::NEG_INFINITY);
        assert!(back.kernel.tflops.unwrap().is_nan());
        // Plain numbers still read as numbers.
        assert_eq!(back.kernel.timing.median_ms, 0.5);
    }

    #[tokio::test]
    async fn an_unreadable_reply_from_a_worker_that_succeeded_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let exe = fake_worker(dir.path(), r#"cat > /dev/null; echo '{"Done":{"device_name":null}}'; exit 0"#);
        let err = run_job(&exe, &job(), DEFAULT_TIMEOUT, &[], &CancellationToken::new()).await.unwrap_err();
        assert!(matches!(err, HarnessError::Worker(_)), "{err:?}");
        assert!(err.to_string().starts_with("the GPU worker finished but its reply could not be read"), "{err}");
    }

    #[tokio::test]
    async fn cancellation_ends_the_worker_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let exe = fake_worker(dir.path(), "sleep 30");
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            c2.cancel();
        });
        let started = std::time::Instant::now();
        let err = run_job(&exe, &job(), Duration::from_secs(30), &[], &cancel).await.unwrap_err();
        assert!(matches!(err, HarnessError::Cancelled), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn no_api_key_reaches_the_worker_or_its_runner() {
        // SAFETY: set once before the child starts; no other test of this crate reads these variables.
        unsafe {
            std::env::set_var("KERNELPRO_LLM_KEY", "sk-secret-kp");
            std::env::set_var("OPENAI_API_KEY", "sk-secret-openai");
        }
        let dir = tempfile::tempdir().unwrap();
        let seen = dir.path().join("env.txt");
        let exe = fake_worker(dir.path(), &format!("env > {}\necho '{{\"Failed\":\"no GPU\"}}'", seen.display()));
        let runner = ["env".to_string(), "ANTHROPIC_API_KEY=sk-secret-runner".to_string()];
        let err = run_job(&exe, &job(), DEFAULT_TIMEOUT, &runner, &CancellationToken::new()).await.unwrap_err();
        assert_eq!(err.to_string(), "no GPU");
        let env = std::fs::read_to_string(&seen).unwrap();
        assert!(env.contains("PATH="), "{env}");
        assert!(
            !env.contains("sk-secret-kp") && !env.contains("sk-secret-openai"),
            "a key reached the GPU worker:\n{env}"
        );
    }
}
