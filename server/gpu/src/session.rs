//! A long-lived GPU worker for a search: one child process per device that
//! opens the GPU, loads the original and allocates its buffers once, then
//! verifies and times candidates back to back (no new process, CUDA context,
//! buffers or run of the original per candidate).
//!
//! The protocol, one JSON line each way: the parent sends [`Request::Open`]
//! (device, the original, the L2 flush) and the worker answers
//! [`Answer::Opened`]; then each [`Request::Evaluate`] (a candidate, its input
//! seed, what to time) is answered [`Answer::Done`] or [`Answer::Failed`].
//! After a failure the worker exits: a fault in a kernel poisons its CUDA
//! context, so the next candidate gets a fresh worker ([`WorkerSession`]
//! starts one again). The original's outputs and run-to-run variation are
//! measured once per input seed (the first time a candidate is checked on it);
//! each candidate still runs on freshly filled inputs, with its outputs
//! NaN-filled before it writes them, and is timed after another fresh fill
//! with the L2 flushed before every timed launch, as in a one-shot job.
//!
//! [`serve`] is generic over the [`Backend`] that does the GPU work, so the
//! protocol is tested on the CPU with an emulated one (the
//! `kernelpro-gpu-emulate` binary, `tests/session.rs`).

use crate::job::{Job, JobResult, KernelJob};
use crate::process::{DeviceLock, HarnessError};
use kernelpro_runner::{Service, ToolCommand, spawn_service};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio_util::sync::CancellationToken;

/// What a session opens with: the GPU and the original every candidate is checked against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Open {
    pub device: u32,
    /// The original: its outputs are the reference; it is timed when asked.
    pub reference: KernelJob,
    /// Write a scratch buffer of twice the L2 size before each timed launch.
    pub flush_l2: bool,
}

/// One candidate (or the original itself, for the baseline) to check and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Its code and launch; `kernel.launch.seed` is the input seed.
    pub kernel: KernelJob,
    /// Compare its outputs with the original's on the same inputs.
    pub compare: bool,
    pub warmup: u32,
    pub runs: u32,
    pub energy_window_ms: u32,
    /// Also time the original (in the same process, on the same inputs).
    pub time_reference: bool,
    pub time_if_wrong: bool,
    pub timing_budget_ms: u32,
}

impl Evaluation {
    /// The measurement settings as a one-shot job's (the worker's timing code reads them from there).
    pub(crate) fn job_settings(&self) -> Job {
        Job {
            device: 0,
            kernel: self.kernel.clone(),
            reference: None,
            warmup: self.warmup,
            runs: self.runs,
            flush_l2: true,
            energy_window_ms: self.energy_window_ms,
            time_reference: self.time_reference,
            time_if_wrong: self.time_if_wrong,
            timing_budget_ms: self.timing_budget_ms,
        }
    }

    /// Time allowed beyond the kernels' timeout for filling and comparing the buffers (as a job's).
    pub fn setup_allowance(&self) -> Duration {
        self.job_settings().setup_allowance()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    Open(Box<Open>),
    Evaluate(Box<Evaluation>),
}

#[derive(Debug, Serialize, Deserialize)]
pub enum Answer {
    /// The GPU is open: its name.
    Opened(String),
    Done(Box<JobResult>),
    Failed(String),
}

/// A backend call's result, a panic in it told by `panicked`.
fn settled<T>(call: std::thread::Result<Result<T, String>>, panicked: impl Fn() -> String) -> Result<T, String> {
    call.unwrap_or_else(|_| Err(panicked()))
}

/// The GPU work behind [`serve`]: [`crate::worker::Resident`] on a GPU, an emulation in tests.
pub trait Backend: Sized {
    /// Opens the device and loads the original: the backend and the device's name.
    fn open(open: &Open) -> Result<(Self, String), String>;
    fn evaluate(&mut self, evaluation: &Evaluation) -> Result<JobResult, String>;
}

/// A worker that only serves sessions (the emulated workers of the CPU tests): the
/// first stdin line must open one, then [`serve`] on stdin and stdout.
pub fn serve_stdin<B: Backend>() -> i32 {
    let mut input = std::io::stdin().lock();
    let mut first = String::new();
    let _ = input.read_line(&mut first);
    let Some(open) = parse_open(&first) else {
        eprintln!("emulated worker: the first line must open a session");
        return 2;
    };
    serve::<B>(&open, input, std::io::stdout().lock())
}

/// Serves one session: `open` (already read: the first line) then one
/// evaluation per line, one answer line each, until the input ends (exit code 0)
/// or something fails (its answer, then exit code 1).
pub fn serve<B: Backend>(open: &Open, input: impl BufRead, mut output: impl Write) -> i32 {
    let mut send = |answer: &Answer| -> bool {
        let mut line = serde_json::to_string(answer).unwrap_or_else(|e| {
            serde_json::to_string(&Answer::Failed(format!("the GPU worker's result could not be encoded ({e}); this is a KernelPro bug, please report it with the kernel and its spec"))).expect("answers serialize")
        });
        line.push('\n');
        output.write_all(line.as_bytes()).and_then(|_| output.flush()).is_ok()
    };
    let panicked = || {
        "the GPU worker panicked; this is a KernelPro bug, please report it with the kernel and its spec".to_string()
    };
    // A backend call's failure or panic is answered, and ends this worker: a fault may have
    // poisoned the context, so the next candidate gets a fresh one.
    let mut backend = match settled(std::panic::catch_unwind(|| B::open(open)), panicked) {
        Ok((backend, name)) => {
            if !send(&Answer::Opened(name)) {
                return 1;
            }
            backend
        }
        Err(why) => {
            send(&Answer::Failed(why));
            return 1;
        }
    };
    for line in input.lines() {
        let Ok(line) = line else { return 1 };
        if line.trim().is_empty() {
            continue;
        }
        let evaluation = match serde_json::from_str::<Request>(&line) {
            Ok(Request::Evaluate(e)) => e,
            Ok(Request::Open(_)) => {
                send(&Answer::Failed("the GPU worker was opened twice; this is a KernelPro bug".into()));
                return 1;
            }
            Err(e) => {
                send(&Answer::Failed(format!(
                    "the GPU worker got a malformed request ({e}): the worker and the server are different versions?"
                )));
                return 1;
            }
        };
        let call = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| backend.evaluate(&evaluation)));
        match settled(call, panicked) {
            Ok(r) => {
                if !send(&Answer::Done(Box::new(r))) {
                    return 1;
                }
            }
            Err(why) => {
                send(&Answer::Failed(why));
                return 1;
            }
        }
    }
    0
}

/// The first line of a worker's input, when it opens a session.
pub fn parse_open(line: &str) -> Option<Open> {
    match serde_json::from_str::<Request>(line.trim()) {
        Ok(Request::Open(o)) => Some(*o),
        _ => None,
    }
}

/// The parent side: a worker (`EXE __gpu-worker` behind the runner prefix) kept
/// for a search on one device, started again after a failure, a timeout or a cancel.
pub struct WorkerSession {
    argv: Vec<String>,
    runner_prefix: Vec<String>,
    open: Open,
    live: Option<Live>,
    /// Workers started so far (1 for a session where nothing failed).
    pub starts: u32,
}

struct Live {
    service: Service,
    lines: Lines<BufReader<tokio::process::ChildStdout>>,
    stderr: tokio::task::JoinHandle<String>,
}

/// How long opening a worker may take (the driver, the context, the original's buffers), beyond their fill allowance.
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(60);

impl WorkerSession {
    /// A session that runs `exe __gpu-worker` (behind `runner_prefix`) on `open.device`; started on first use.
    pub fn new(exe: &Path, runner_prefix: &[String], open: Open) -> WorkerSession {
        WorkerSession::with_command(
            runner_prefix,
            vec![exe.display().to_string(), crate::WORKER_SUBCOMMAND.into()],
            open,
        )
    }

    /// A session over any worker command (`argv` after the runner prefix): the emulation in tests.
    pub fn with_command(runner_prefix: &[String], argv: Vec<String>, open: Open) -> WorkerSession {
        WorkerSession { argv, runner_prefix: runner_prefix.to_vec(), open, live: None, starts: 0 }
    }

    pub fn open_request(&self) -> &Open {
        &self.open
    }

    /// Checks and times one candidate in the worker, starting it (and opening
    /// the GPU) first when none is live. The device lock is held for this
    /// evaluation only, so other searches on the same GPU take turns with it.
    /// Any failure ends the worker: the next call starts a new one.
    pub async fn evaluate(
        &mut self,
        evaluation: &Evaluation,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<JobResult, HarnessError> {
        let _device = tokio::select! {
            lock = DeviceLock::acquire(&self.runner_prefix, self.open.device) => lock,
            () = cancel.cancelled() => return Err(HarnessError::Cancelled),
        };
        if self.live.is_none() {
            let allowance = Duration::from_secs_f64(
                self.open.reference.launch.buffers().map(|b| b.size_bytes()).sum::<u64>() as f64 / (1u64 << 30) as f64,
            );
            self.start(OPEN_TIMEOUT + allowance, cancel).await?;
        }
        let request = Request::Evaluate(Box::new(evaluation.clone()));
        match self.exchange(&request, timeout, cancel).await? {
            Answer::Done(r) => Ok(*r),
            Answer::Failed(why) => {
                self.stop().await;
                Err(HarnessError::Worker(why))
            }
            Answer::Opened(_) => {
                self.stop().await;
                Err(HarnessError::Worker("the GPU worker answered out of turn; this is a KernelPro bug".into()))
            }
        }
    }

    async fn start(&mut self, timeout: Duration, cancel: &CancellationToken) -> Result<(), HarnessError> {
        let mut argv = self.runner_prefix.clone();
        argv.extend(self.argv.iter().cloned());
        let command = ToolCommand::new(&argv[0], timeout).args(&argv[1..]);
        let mut service = spawn_service(&command)
            .map_err(|e| HarnessError::Spawn { command: argv.join(" "), message: e.to_string() })?;
        self.starts += 1;
        let lines = BufReader::new(service.stdout.take().expect("piped stdout")).lines();
        let mut stderr = service.stderr.take().expect("piped stderr");
        // The last few KiB of stderr, for a crash's message.
        let stderr = tokio::spawn(async move {
            let mut tail = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 16 << 10 {
                    tail.drain(..tail.len() - (8 << 10));
                }
            }
            String::from_utf8_lossy(&tail).into_owned()
        });
        self.live = Some(Live { service, lines, stderr });
        match self.exchange(&Request::Open(Box::new(self.open.clone())), timeout, cancel).await? {
            Answer::Opened(_) => Ok(()),
            Answer::Failed(why) => {
                self.stop().await;
                Err(HarnessError::Worker(why))
            }
            Answer::Done(_) => {
                self.stop().await;
                Err(HarnessError::Worker("the GPU worker answered out of turn; this is a KernelPro bug".into()))
            }
        }
    }

    /// Sends one request and reads its answer, within `timeout` and until `cancel`; the worker is ended on either.
    async fn exchange(
        &mut self,
        request: &Request,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Answer, HarnessError> {
        let live = self.live.as_mut().expect("a live worker");
        let mut line = serde_json::to_vec(request).expect("requests serialize");
        line.push(b'\n');
        let work = async {
            if live.service.stdin.write_all(&line).await.is_err() || live.service.stdin.flush().await.is_err() {
                return None;
            }
            // Runners (ssh banners, srun) may print before the answer, even on the same line.
            while let Ok(Some(l)) = live.lines.next_line().await {
                if let Some(at) = l.find('{')
                    && let Ok(answer) = serde_json::from_str::<Answer>(l[at..].trim())
                {
                    return Some(answer);
                }
            }
            None
        };
        let answer = tokio::select! {
            a = work => a,
            () = tokio::time::sleep(timeout) => {
                self.stop().await;
                return Err(HarnessError::Timeout { after: timeout });
            }
            () = cancel.cancelled() => {
                self.stop().await;
                return Err(HarnessError::Cancelled);
            }
        };
        match answer {
            Some(a) => Ok(a),
            None => {
                let Some(mut live) = self.live.take() else { unreachable!("checked above") };
                // The worker ended without an answer: its exit and the tail of its stderr.
                let code = tokio::time::timeout(Duration::from_secs(2), async {
                    loop {
                        if let Some(c) = live.service.exit_code() {
                            return Some(c);
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                })
                .await
                .ok()
                .flatten();
                live.service.kill().await;
                let stderr = tokio::time::timeout(Duration::from_secs(2), live.stderr).await.ok().and_then(|r| r.ok());
                Err(HarnessError::Crashed {
                    status: code.map_or_else(|| "killed by a signal".to_string(), |c| format!("exit code {c}")),
                    stderr: stderr.unwrap_or_default(),
                })
            }
        }
    }

    /// Ends the live worker, if any (the next evaluation starts another).
    pub async fn stop(&mut self) {
        if let Some(live) = self.live.take() {
            live.stderr.abort();
            live.service.kill().await;
        }
    }

    /// Whether a worker is running now.
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// The command this session runs (for messages).
    pub fn command(&self) -> PathBuf {
        PathBuf::from(self.argv.first().cloned().unwrap_or_default())
    }
}
