//! The parent side: runs a job in a child process (`kernelpro __gpu-worker`)
//! so that faults, hangs and driver errors cannot take the server down.

use crate::job::{Job, JobResult};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

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
        "could not start the GPU worker `{command}`: {source}; check the runner setting and that the program exists on the GPU machine"
    )]
    Spawn { command: String, source: std::io::Error },
    #[error(
        "the GPU work did not finish within {} s and was killed: the kernel may never end (check loop bounds, and `__syncthreads()` or spin-waits in divergent code), or it is just slow: raise the timeout setting",
        .after.as_secs_f64()
    )]
    Timeout { after: Duration },
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

/// API keys no child gets: nvcc, the GPU worker, ncu, a runner and the
/// program under test need none (the one list; `core::process` uses it too).
pub const SECRET_ENV: [&str; 3] = ["KERNELPRO_LLM_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// Runs `job` in `runner_prefix... exe __gpu-worker`, killing the child's whole
/// process group when `timeout` passes.
pub fn run_job(exe: &Path, job: &Job, timeout: Duration, runner_prefix: &[String]) -> Result<JobResult, HarnessError> {
    let mut argv: Vec<String> = runner_prefix.to_vec();
    argv.push(exe.to_string_lossy().into_owned());
    argv.push(WORKER_SUBCOMMAND.to_string());
    let mut command = Command::new(&argv[0]);
    for secret in SECRET_ENV {
        command.env_remove(secret);
    }
    let mut child = command
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|source| HarnessError::Spawn { command: argv.join(" "), source })?;
    // Dropped on every return, after the group is killed below.
    let _registered = crate::children::register(child.id() as i32);

    let input = serde_json::to_vec(job).expect("a job always serializes");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    // Written from a thread: a child that never reads must not block us past the timeout.
    thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let stdout = drain(child.stdout.take().expect("stdout is piped"));
    let stderr = drain(child.stderr.take().expect("stderr is piped"));

    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() >= timeout => {
                kill_group(child.id());
                let _ = child.wait();
                return Err(HarnessError::Timeout { after: timeout });
            }
            Ok(None) => thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(HarnessError::Crashed { status: e.to_string(), stderr: String::new() }),
        }
    };
    // Grandchildren (an ssh session, a runner) may hold the pipes open; end them too.
    kill_group(child.id());
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match parse_reply(&stdout) {
        Ok(Reply::Done(result)) => Ok(*result),
        Ok(Reply::Failed(message)) => Err(HarnessError::Worker(message)),
        Err(Some(e)) if status.success() => Err(HarnessError::Worker(format!(
            "the GPU worker finished but its reply could not be read ({e}); the worker and the server are different versions, or this is a KernelPro bug"
        ))),
        Err(_) => Err(HarnessError::Crashed { status: describe(status), stderr }),
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut out = Vec::new();
        let _ = pipe.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    })
}

fn kill_group(pid: u32) {
    // SAFETY: kill(2) with a negative pid signals the group we created with process_group(0).
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
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

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => status.to_string(),
    }
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

    /// A fake worker: a shell script with `body`.
    fn fake_worker(dir: &Path, body: &str) -> std::path::PathBuf {
        let path = dir.join("worker.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn kills_the_whole_group_on_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        let exe = fake_worker(dir.path(), &format!("sleep 30 & echo $! > {}\nwait", pid_file.display()));
        let err = run_job(&exe, &job(), Duration::from_millis(500), &[]).unwrap_err();
        assert!(matches!(err, HarnessError::Timeout { .. }), "{err}");
        assert!(err.to_string().starts_with("the GPU work did not finish within 0.5 s and was killed"));
        let grandchild: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        // The grandchild is gone once init reaps it; poll instead of sleeping a fixed time.
        let gone = (0..200).any(|_| {
            thread::sleep(Duration::from_millis(10));
            // SAFETY: signal 0 only checks that the process exists.
            unsafe { libc::kill(grandchild, 0) != 0 }
        });
        assert!(gone, "the sleeping grandchild survived");
    }

    #[test]
    fn reports_a_crash_with_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let exe = fake_worker(dir.path(), "cat > /dev/null; echo 'Segmentation fault' >&2; exit 139");
        let err = run_job(&exe, &job(), DEFAULT_TIMEOUT, &[]).unwrap_err();
        assert_eq!(err.to_string(), "the GPU worker died (exit code 139) without a result: Segmentation fault");
    }

    #[test]
    fn passes_the_job_and_reads_the_reply_after_runner_noise() {
        let dir = tempfile::tempdir().unwrap();
        // The reply echoes the job's function name back to prove stdin arrived.
        let exe = fake_worker(
            dir.path(),
            r#"grep -q '"function":"k"' && echo 'Welcome to gpu-box' && echo 'srun: {"Failed":"no CUDA driver here"}'"#,
        );
        let prefix = vec!["env".to_string(), "KERNELPRO_RUNNER=1".to_string()];
        let err = run_job(&exe, &job(), DEFAULT_TIMEOUT, &prefix).unwrap_err();
        assert_eq!(err.to_string(), "no CUDA driver here");
    }

    #[test]
    fn reports_a_runner_that_cannot_start() {
        let err = run_job(Path::new("/nonexistent/kernelpro"), &job(), DEFAULT_TIMEOUT, &[]).unwrap_err();
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
        expect_test::expect![[r#"{"device":0,"kernel":{"image":{"ptx":".version 8.0"},"function":"k","launch":{"kernel":"k","grid":[1,1,1],"block":[32,1,1],"smem":0,"args":[],"check":null,"seed":42,"tunables":[],"instantiate":null,"op":null,"lets":{}}},"reference":null,"warmup":3,"runs":50,"flush_l2":true,"energy_window_ms":1000}"#]].assert_eq(&text);
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

    #[test]
    fn an_unreadable_reply_from_a_worker_that_succeeded_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let exe = fake_worker(dir.path(), r#"cat > /dev/null; echo '{"Done":{"device_name":null}}'; exit 0"#);
        let err = run_job(&exe, &job(), DEFAULT_TIMEOUT, &[]).unwrap_err();
        assert!(matches!(err, HarnessError::Worker(_)), "{err:?}");
        assert!(err.to_string().starts_with("the GPU worker finished but its reply could not be read"), "{err}");
    }
}
