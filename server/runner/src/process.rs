//! Running external programs (nvcc, nvdisasm, ncu, the GPU worker) safely: each
//! in its own process group, with a timeout, a cancellation token, capped output,
//! and the whole group killed if the caller's future is dropped.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Output beyond this is dropped (and said so); past `KILL_AFTER_BYTES` the tool is killed.
pub const OUTPUT_CAP_BYTES: usize = 4 << 20;
const KILL_AFTER_BYTES: usize = 64 << 20;

pub use crate::SECRET_ENV;

#[derive(Debug, Clone)]
pub struct ToolCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    pub stdin: Option<Vec<u8>>,
    /// Input that is not ready when the program starts (a GPU worker started
    /// while the file still compiles): written once the sender gives it; the
    /// program reads end of input if the sender is dropped without.
    pub stdin_later: Option<LateInput>,
    pub timeout: Duration,
}

/// The receiving side of input given after the start ([`ToolCommand::stdin_later`]).
pub type LateInput = tokio::sync::watch::Receiver<Option<std::sync::Arc<Vec<u8>>>>;

/// The value once given (the input of a [`LateInput`], or anything else given late through a
/// watch channel), or `None` once its sender is gone without giving it.
pub async fn late_input<T: Clone>(mut late: tokio::sync::watch::Receiver<Option<T>>) -> Option<T> {
    loop {
        if let Some(data) = late.borrow_and_update().clone() {
            return Some(data);
        }
        if late.changed().await.is_err() {
            return late.borrow().clone();
        }
    }
}

impl ToolCommand {
    pub fn new(program: impl Into<PathBuf>, timeout: Duration) -> Self {
        ToolCommand {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            stdin: None,
            stdin_later: None,
            timeout,
        }
    }
    pub fn arg(mut self, a: impl Into<OsString>) -> Self {
        self.args.push(a.into());
        self
    }
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }
    pub fn stdin(mut self, data: Vec<u8>) -> Self {
        self.stdin = Some(data);
        self
    }
    pub fn stdin_later(mut self, late: LateInput) -> Self {
        self.stdin_later = Some(late);
        self
    }
    fn tool_name(&self) -> String {
        self.program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }
    /// The arguments as one line for the log, cut at [`ARGS_IN_LOG`] characters.
    fn args_summary(&self) -> String {
        let line = self.args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
        match line.char_indices().nth(ARGS_IN_LOG) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line,
        }
    }
}

/// How much of a command line the debug log shows.
const ARGS_IN_LOG: usize = 240;

#[derive(Debug, Clone)]
pub struct ToolOutput {
    /// Exit code; `None` when killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// Some output was dropped past `OUTPUT_CAP_BYTES`.
    pub truncated: bool,
    pub elapsed: Duration,
}

impl ToolOutput {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    #[error("{tool} was not found at {path}")]
    NotFound { tool: String, path: PathBuf },
    #[error("{tool} at {path} is not executable (check its permissions: chmod +x)")]
    NotExecutable { tool: String, path: PathBuf },
    #[error("could not start {tool}: {message}")]
    Spawn { tool: String, message: String },
    #[error("{tool} did not finish within {secs} s and was stopped; raise the timeout setting if the file is large")]
    Timeout { tool: String, secs: u64 },
    #[error("{tool} printed more than {mb} MiB of output and was stopped")]
    Flood { tool: String, mb: usize },
    #[error("{tool} was cancelled")]
    Cancelled { tool: String },
}

/// Kills the whole process group when dropped, unless disarmed: a dropped
/// request future (LSP cancellation) must not leave nvcc's children running.
struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: plain syscall; a negative pid addresses the process group.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A long-lived child (the GPU worker serving a search): started like every
/// tool (its own process group, no API keys, `LC_ALL=C`), its pipes handed to
/// the caller, its group killed when the `Service` is dropped or [`Service::kill`]ed.
/// It takes no place under the job limit: it waits on the GPU, not a core.
/// `cmd.timeout` and `cmd.stdin` are not used: the caller bounds each exchange.
pub struct Service {
    pub stdin: tokio::process::ChildStdin,
    /// Taken by the reader.
    pub stdout: Option<tokio::process::ChildStdout>,
    pub stderr: Option<tokio::process::ChildStderr>,
    child: tokio::process::Child,
    // Declared last, dropped last: registered until the guard has killed the group.
    guard: GroupGuard,
    _registered: Option<crate::children::Registration>,
}

impl Service {
    /// Kills the group now and reaps the leader.
    pub async fn kill(mut self) {
        self.guard.kill();
        let _ = self.child.wait().await;
    }

    /// The leader's exit code once it has ended (`None`: still running, or killed by a signal).
    pub fn exit_code(&mut self) -> Option<i32> {
        self.child.try_wait().ok().flatten().and_then(|s| s.code())
    }
}

/// How every child starts (a tool run or a service): its own process group,
/// killed on drop, `LC_ALL=C`, piped output, no API key in its environment
/// (neither inherited nor passed), `tmpdir` as its `TMPDIR` (before the
/// command's own variables, which may name another).
fn command_for(cmd: &ToolCommand, stdin: Stdio, tmpdir: Option<&Path>) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("LC_ALL", "C")
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = tmpdir {
        command.env("TMPDIR", dir);
    }
    for secret in SECRET_ENV {
        command.env_remove(secret);
    }
    for (k, v) in cmd.env.iter().filter(|(k, _)| !SECRET_ENV.contains(&k.as_str())) {
        command.env(k, v);
    }
    if let Some(dir) = &cmd.cwd {
        command.current_dir(dir);
    }
    command
}

/// A failed spawn in words: not found, not executable, or the OS's reason.
fn spawn_error(e: std::io::Error, cmd: &ToolCommand, tool: &str) -> ToolError {
    let tool = tool.to_string();
    match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::NotFound { tool, path: cmd.program.clone() },
        std::io::ErrorKind::PermissionDenied => ToolError::NotExecutable { tool, path: cmd.program.clone() },
        _ => ToolError::Spawn { tool, message: e.to_string() },
    }
}

pub fn spawn_service(cmd: &ToolCommand) -> Result<Service, ToolError> {
    let tool = cmd.tool_name();
    check_executable(&cmd.program, &tool)?;
    let mut child = command_for(cmd, Stdio::piped(), None).spawn().map_err(|e| spawn_error(e, cmd, &tool))?;
    let registered = child.id().map(|p| crate::children::register(p as i32));
    let guard = GroupGuard { pgid: child.id().map(|p| p as i32) };
    tracing::debug!(program = %tool, args = cmd.args_summary().as_str(), pid = child.id(), "service started");
    Ok(Service {
        stdin: child.stdin.take().expect("piped stdin"),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        guard,
        _registered: registered,
    })
}

/// Runs `cmd` to its end, its timeout or `cancel`. Logged at debug level in a
/// `tool` span (the program and its arguments): when it started (and how long
/// it waited for a job place), then how it ended and how long it ran.
pub async fn run_tool(cmd: &ToolCommand, cancel: &CancellationToken) -> Result<ToolOutput, ToolError> {
    let span = tracing::debug_span!("tool", program = %cmd.tool_name(), args = cmd.args_summary().as_str());
    async {
        let started = Instant::now();
        let result = run_tool_unlogged(cmd, cancel).await;
        let ms = started.elapsed().as_millis() as u64;
        match &result {
            Ok(out) => tracing::debug!(
                code = ?out.code,
                ms,
                stdout_bytes = out.stdout.len(),
                stderr_bytes = out.stderr.len(),
                truncated = out.truncated,
                "finished"
            ),
            Err(error) => tracing::debug!(%error, ms, "failed"),
        }
        result
    }
    .instrument(span)
    .await
}

async fn run_tool_unlogged(cmd: &ToolCommand, cancel: &CancellationToken) -> Result<ToolOutput, ToolError> {
    let tool = cmd.tool_name();
    let queued = Instant::now();
    check_executable(&cmd.program, &tool)?;
    // Waits for a place under the machine-wide job limit; a superseded run leaves the queue.
    let Some(_slot) = crate::jobs::slot(cancel).await else { return Err(ToolError::Cancelled { tool }) };
    // Tools write intermediates to TMPDIR (nvcc's tmpxft_* files) and leave
    // them when killed: give each run a private one, removed when this returns.
    let scratch = tempfile::Builder::new().prefix("kernelpro-tool-").tempdir().ok();
    let stdin = if cmd.stdin.is_some() || cmd.stdin_later.is_some() { Stdio::piped() } else { Stdio::null() };
    let mut command = command_for(cmd, stdin, scratch.as_ref().map(|d| d.path()));
    let start = Instant::now();
    let waited_ms = start.duration_since(queued).as_millis() as u64;
    let mut child = command.spawn().map_err(|e| spawn_error(e, cmd, &tool))?;
    tracing::debug!(pid = child.id(), waited_ms, "started");
    // Declared first, dropped last: registered until the guard has killed the group.
    let _registered = child.id().map(|p| crate::children::register(p as i32));
    let mut guard = GroupGuard { pgid: child.id().map(|p| p as i32) };
    if let Some(mut stdin) = child.stdin.take() {
        let (now, late) = (cmd.stdin.clone(), cmd.stdin_later.clone());
        tokio::spawn(async move {
            let data = match (now, late) {
                (Some(data), _) => Some(std::sync::Arc::new(data)),
                (None, Some(late)) => late_input(late).await,
                (None, None) => None,
            };
            if let Some(data) = data {
                let _ = stdin.write_all(&data).await;
            }
        });
    }
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let flood = CancellationToken::new();
    let out_task = tokio::spawn(read_capped(stdout, flood.clone()));
    let err_task = tokio::spawn(read_capped(stderr, flood.clone()));

    let status = tokio::select! {
        status = child.wait() => status.map_err(|e| ToolError::Spawn { tool: tool.clone(), message: e.to_string() })?,
        _ = tokio::time::sleep(cmd.timeout) => {
            guard.kill();
            let _ = child.wait().await;
            return Err(ToolError::Timeout { tool, secs: cmd.timeout.as_secs().max(1) });
        }
        _ = cancel.cancelled() => {
            guard.kill();
            let _ = child.wait().await;
            return Err(ToolError::Cancelled { tool });
        }
        _ = flood.cancelled() => {
            guard.kill();
            let _ = child.wait().await;
            return Err(ToolError::Flood { tool, mb: KILL_AFTER_BYTES >> 20 });
        }
    };
    // The leader exited; grandchildren that kept the pipes open are killed with the group.
    guard.kill();
    // One that left the group (setsid) can hold the pipes open for ever: the
    // timeout and cancellation still bound the wait for end of output.
    let (out_abort, err_abort) = (out_task.abort_handle(), err_task.abort_handle());
    let drained = async { (out_task.await.unwrap_or_default(), err_task.await.unwrap_or_default()) };
    let ((stdout, t1), (stderr, t2)) = tokio::select! {
        both = drained => both,
        _ = tokio::time::sleep(cmd.timeout.saturating_sub(start.elapsed())) => {
            out_abort.abort();
            err_abort.abort();
            return Err(ToolError::Timeout { tool, secs: cmd.timeout.as_secs().max(1) });
        }
        _ = cancel.cancelled() => {
            out_abort.abort();
            err_abort.abort();
            return Err(ToolError::Cancelled { tool });
        }
    };
    if flood.is_cancelled() {
        return Err(ToolError::Flood { tool, mb: KILL_AFTER_BYTES >> 20 });
    }
    Ok(ToolOutput {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        truncated: t1 || t2,
        elapsed: start.elapsed(),
    })
}

fn check_executable(program: &Path, tool: &str) -> Result<(), ToolError> {
    use std::os::unix::fs::PermissionsExt;
    if program.components().count() > 1 {
        let meta = std::fs::metadata(program)
            .map_err(|_| ToolError::NotFound { tool: tool.to_string(), path: program.to_path_buf() })?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(ToolError::NotExecutable { tool: tool.to_string(), path: program.to_path_buf() });
        }
    }
    Ok(())
}

async fn read_capped<R: AsyncRead + Unpin>(mut reader: R, flood: CancellationToken) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut total = 0usize;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                total += n;
                if kept.len() < OUTPUT_CAP_BYTES {
                    let take = n.min(OUTPUT_CAP_BYTES - kept.len());
                    kept.extend_from_slice(&buf[..take]);
                }
                if total > KILL_AFTER_BYTES {
                    flood.cancel();
                    break;
                }
            }
        }
    }
    (kept, total > OUTPUT_CAP_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, secs: u64) -> ToolCommand {
        ToolCommand::new("/bin/sh", Duration::from_secs(secs)).arg("-c").arg(script)
    }

    #[tokio::test]
    async fn captures_output_and_code() {
        let out = run_tool(&sh("echo hi; echo err >&2; exit 3", 5), &CancellationToken::new()).await.unwrap();
        assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (Some(3), "hi\n", "err\n"));
    }

    /// A program started before its input exists reads it once given, and end
    /// of input when the giver is gone without it.
    #[tokio::test]
    async fn input_given_after_the_start() {
        let (give, late) = tokio::sync::watch::channel(None);
        let cmd = sh("echo started; cat", 5).stdin_later(late);
        let run = tokio::spawn(async move { run_tool(&cmd, &CancellationToken::new()).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        give.send(Some(std::sync::Arc::new(b"the job\n".to_vec()))).unwrap();
        assert_eq!(run.await.unwrap().unwrap().stdout, "started\nthe job\n");
        let (give, late) = tokio::sync::watch::channel(None);
        let cmd = sh("cat; echo end", 5).stdin_later(late);
        let run = tokio::spawn(async move { run_tool(&cmd, &CancellationToken::new()).await });
        drop(give);
        assert_eq!(run.await.unwrap().unwrap().stdout, "end\n");
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let marker = std::env::temp_dir().join(format!("kp-grp-{}", std::process::id()));
        let script = format!("(sleep 30; touch {}) & sleep 30", marker.display());
        let err = run_tool(&sh(&script, 1), &CancellationToken::new()).await.unwrap_err();
        assert!(matches!(err, ToolError::Timeout { .. }), "{err}");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!marker.exists());
    }

    #[tokio::test]
    async fn cancellation_stops_the_tool() {
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            c2.cancel();
        });
        let err = run_tool(&sh("sleep 30", 30), &cancel).await.unwrap_err();
        assert!(matches!(err, ToolError::Cancelled { .. }));
    }

    #[tokio::test]
    async fn flood_of_output_is_stopped() {
        let err = run_tool(&sh("yes garbage-garbage-garbage", 30), &CancellationToken::new()).await.unwrap_err();
        assert!(matches!(err, ToolError::Flood { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_detached_child_holding_the_pipes_does_not_outlast_the_timeout() {
        let marker = format!("{}", 2000 + std::process::id() % 1000);
        // The sleep 0.5 lets the detached child start before the group is killed.
        let err = run_tool(&sh(&format!("setsid sleep {marker} & sleep 0.5; exit 1"), 2), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Timeout { .. }), "{err}");
        // It is out of any group we own: end it by its pid.
        let cmdline = format!("sleep\0{marker}\0");
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            if std::fs::read(entry.path().join("cmdline")).is_ok_and(|c| c == cmdline.as_bytes())
                && let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>()
            {
                // SAFETY: plain syscall on the pid of the sleep this test started.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }

    #[tokio::test]
    async fn a_killed_tool_leaves_no_temp_files() {
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            c2.cancel();
        });
        let out = std::env::temp_dir().join(format!("kp-scratch-{}", std::process::id()));
        let script = format!("echo $TMPDIR > {0}; touch $TMPDIR/tmpxft_left; sleep 30", out.display());
        assert!(run_tool(&sh(&script, 30), &cancel).await.is_err());
        let scratch = std::fs::read_to_string(&out).unwrap();
        std::fs::remove_file(&out).unwrap();
        assert!(scratch.contains("kernelpro-tool-") && !std::path::Path::new(scratch.trim()).exists(), "{scratch}");
    }

    #[tokio::test]
    async fn no_child_sees_an_api_key() {
        // SAFETY: set once before the child starts; no other test reads these variables.
        unsafe {
            std::env::set_var("KERNELPRO_LLM_KEY", "sk-secret-kp");
            std::env::set_var("OPENAI_API_KEY", "sk-secret-openai");
        }
        let cmd = sh("env", 5).env("ANTHROPIC_API_KEY", "sk-secret-passed");
        let out = run_tool(&cmd, &CancellationToken::new()).await.unwrap();
        assert!(out.stdout.contains("LC_ALL=C"), "the child's env was printed: {}", out.stdout);
        for secret in SECRET_ENV {
            assert!(!out.stdout.contains(&format!("{secret}=")), "{secret} reached the child:\n{}", out.stdout);
        }
        assert!(!out.stdout.contains("sk-secret"));
    }

    #[tokio::test]
    async fn missing_and_non_executable_tools_are_named() {
        let missing =
            run_tool(&ToolCommand::new("/nonexistent/nvcc", Duration::from_secs(1)), &CancellationToken::new()).await;
        assert!(matches!(missing, Err(ToolError::NotFound { .. })));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("nvcc");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        let not_exec = run_tool(&ToolCommand::new(&file, Duration::from_secs(1)), &CancellationToken::new()).await;
        assert!(matches!(not_exec, Err(ToolError::NotExecutable { .. })));
    }
}
