//! The `kernelpro` binary: the language server and the command-line front
//! ends to the same core (`check`, `doctor`, ...).
// Every `unsafe` block says why it is sound (CI runs clippy with -D warnings).
#![deny(clippy::undocumented_unsafe_blocks)]

mod check;
mod optimize;
mod profile;
mod run;
mod spec;

use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "kernelpro",
    version,
    about = "Find and fix what makes CUDA kernels slow, from the editor or the command line."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Log what runs on stderr: each tool's command line, how long it took and
    /// how it ended, the analysis steps, and each candidate of a search (its
    /// recipe, compile and GPU-job times, why it was rejected). KERNELPRO_LOG
    /// (a level, or a tracing filter such as kernelpro_search=debug) picks what.
    /// The language server logs to the editor instead (KERNELPRO_LOG=debug there).
    #[arg(short, long, global = true)]
    verbose: bool,
}

/// Settings shared by the commands that compile.
#[derive(clap::Args, Clone)]
pub struct CompileArgs {
    /// Target architecture, e.g. sm_90.
    #[arg(long, default_value = "sm_90")]
    pub arch: String,
    /// Path to nvcc (else KERNELPRO_NVCC, CUDA_HOME, PATH, the project's .venv).
    #[arg(long)]
    pub nvcc: Option<PathBuf>,
    /// Extra include directory (repeatable).
    #[arg(short = 'I', long = "include")]
    pub include: Vec<PathBuf>,
    /// Extra nvcc flag, passed as one argument (repeatable).
    #[arg(long = "flag", allow_hyphen_values = true)]
    pub flags: Vec<String>,
    /// Block size assumed for occupancy when a kernel has no launch spec.
    #[arg(long, default_value_t = 256)]
    pub block_size: u32,
}

impl CompileArgs {
    pub fn settings(&self) -> kernelpro_config::settings::Settings {
        kernelpro_config::settings::Settings {
            trusted: true, // running the CLI on a file is consent to compile it
            arch: self.arch.clone(),
            nvcc: self.nvcc.clone(),
            // nvcc runs in the checked file's folder: a relative `-I` is the caller's.
            include_paths: self.include.iter().map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())).collect(),
            extra_flags: self.flags.clone(),
            block_size: self.block_size,
            // Messages name the command line's options, not an editor's settings.
            words: kernelpro_config::words::Words::COMMAND_LINE,
            ..Default::default()
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run the language server on stdin/stdout.
    Lsp,
    /// Compile files and print findings like a compiler: file:line:col: severity: message [code].
    Check {
        files: Vec<PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: check::Format,
        /// Also print what the hover shows for this 1-based source line.
        #[arg(long)]
        sass: Option<u32>,
        #[command(flatten)]
        compile: CompileArgs,
    },
    /// Launch a kernel on the GPU with its launch spec: time, bandwidth, energy, checksums.
    Run(run::RunArgs),
    /// Profile kernels with Nsight Compute: roofline triage, then the tools for each kernel's class.
    Profile(profile::ProfileArgs),
    /// Search for a faster, verified version of a kernel (MCTS over rewrites).
    Optimize(optimize::OptimizeArgs),
    /// Print a kernel's resolved launch spec as JSON (buffers, C types, launch, tolerances, flags).
    Spec(spec::SpecArgs),
    /// The GPU harness's child process (internal).
    #[command(name = "__gpu-worker", hide = true)]
    GpuWorker,
    /// Install the CUDA compiler (pinned NVIDIA wheels) into a Python environment of its own
    /// and print its nvcc; point the `nvcc` setting (or KERNELPRO_NVCC) at it.
    InstallCuda {
        /// Where the environment goes (default: the user's data folder, kernelpro/cuda).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// An argument for pip, e.g. --pip-arg=--index-url=URL (repeatable).
        #[arg(long = "pip-arg", allow_hyphen_values = true)]
        pip_args: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Check what KernelPro can find and use here, with the fix for each missing piece.
    Doctor {
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.verbose && !matches!(cli.command, Some(Command::Lsp) | None) {
        log_to_stderr();
    }
    if let Some(Command::GpuWorker) = cli.command {
        // The worker speaks JSON on stdin/stdout and needs no async runtime.
        return ExitCode::from(kernelpro_gpu::worker_main().clamp(0, 255) as u8);
    }
    let command = match cli.command {
        Some(c) => c,
        None if !std::io::stdin().is_terminal() => Command::Lsp,
        None => {
            eprintln!("kernelpro: no command given; try `kernelpro --help` (the language server is `kernelpro lsp`)");
            return ExitCode::from(2);
        }
    };
    if !matches!(command, Command::Lsp) {
        // Behave like a normal CLI when piped into `head`: end quietly on a closed pipe.
        // SAFETY: restoring the default disposition of one signal at start-up.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let code = runtime.block_on(async {
        end_children_on_signal();
        match command {
            Command::Lsp => kernelpro_lsp::serve_stdio().await,
            Command::Check { files, format, sass, compile } => check::run(&files, format, sass, &compile).await,
            Command::Run(args) => run::run(&args).await,
            Command::Optimize(args) => optimize::run(&args).await,
            Command::Profile(args) => profile::run(&args).await,
            Command::Spec(args) => spec::run(&args),
            Command::GpuWorker => unreachable!("handled before the runtime starts"),
            Command::InstallCuda { dir, pip_args, json } => install_cuda(dir, &pip_args, json).await,
            Command::Doctor { json } => {
                // The user runs it: trusted, with no project (the working directory is never searched).
                let settings = kernelpro_config::settings::Settings {
                    trusted: true,
                    words: kernelpro_config::words::Words::COMMAND_LINE,
                    ..Default::default()
                };
                let report = kernelpro_measure::doctor::report(&settings).await;
                if json {
                    println!("{}", serde_json::to_string_pretty(&report).expect("json"));
                } else {
                    print!("{}", report.to_text());
                }
                ExitCode::SUCCESS
            }
        }
    });
    // Work left on blocking threads (an analysis of a huge file, cancelled but
    // between two checks of its flag) must not hold `exit`: dropping the
    // runtime would wait for it. The tasks' futures are dropped, so their
    // children's groups are killed (`runner::run_tool`).
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    kernelpro_runner::children::kill_all();
    code
}

/// `--verbose`: events and their spans on stderr, each with the seconds since
/// the start (KernelPro's crates at debug level unless KERNELPRO_LOG says otherwise).
fn log_to_stderr() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .with_timer(tracing_subscriber::fmt::time::Uptime::default());
    let _ =
        tracing_subscriber::registry().with(kernelpro_lsp::log::filter(tracing::Level::DEBUG)).with(layer).try_init();
}

/// SIGTERM (an editor stopping the server, a service manager), SIGINT
/// (Ctrl-C) and SIGHUP (the terminal or the editor's pty closing) end this
/// process, but not its children: each leads its own process group. Kill
/// those groups first, then exit as the signal would have.
fn end_children_on_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) =
        (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::hangup()))
    else {
        return;
    };
    tokio::spawn(async move {
        let signal = tokio::select! {
            _ = term.recv() => libc::SIGTERM,
            _ = int.recv() => libc::SIGINT,
            _ = hup.recv() => libc::SIGHUP,
        };
        kernelpro_runner::children::kill_all();
        std::process::exit(128 + signal);
    });
}

async fn install_cuda(dir: Option<PathBuf>, pip_args: &[String], json: bool) -> ExitCode {
    let Some(dir) = dir.or_else(|| dirs::data_dir().map(|d| d.join("kernelpro").join("cuda"))) else {
        eprintln!("kernelpro install-cuda: no data folder is known here: give one with --dir");
        return ExitCode::from(2);
    };
    if !json {
        eprintln!("installing the CUDA compiler into {} (a few hundred MB, a minute or two)…", dir.display());
    }
    match kernelpro_toolchain::install::install_cuda(&dir, pip_args, &tokio_util::sync::CancellationToken::new()).await
    {
        Ok(nvcc) => {
            if json {
                println!("{}", serde_json::json!({"nvcc": nvcc, "dir": dir}));
            } else {
                println!("{}", nvcc.display());
                eprintln!("done: set the `nvcc` setting (or KERNELPRO_NVCC) to the path above");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kernelpro install-cuda: {e}");
            ExitCode::from(1)
        }
    }
}
