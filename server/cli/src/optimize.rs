//! `kernelpro optimize`: the editor's "Optimize this kernel" from the command line.

use crate::CompileArgs;
use kernelpro_optimize::{OptimizeOutcome, OptimizeRequest, optimize};
use kernelpro_search::Strategy;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct OptimizeArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub kernel: String,
    /// Candidate evaluations (compile + verify + time).
    #[arg(long, default_value_t = 60)]
    pub budget: u32,
    /// Wall-time limit in seconds for the whole run: the original's profile and
    /// baseline, the search and the held-out checks. At the limit the work in
    /// flight is stopped and the best candidate verified so far is given.
    #[arg(long, default_value_t = 1800)]
    pub time: u64,
    #[arg(long, value_enum, default_value = "mcts")]
    pub strategy: StrategyArg,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// `gpu` (the harness), or `stub:SPEEDUP` (`stub:SPEEDUP:LAUNCH_SPEEDUP`) to try the search without a GPU.
    #[arg(long, default_value = "gpu", value_parser = parse_evaluator)]
    pub evaluator: String,
    /// Also ask an LLM for rewrites: give its model (--llm-model or KERNELPRO_LLM_MODEL) and
    /// its key in KERNELPRO_LLM_KEY (a local endpoint may need none).
    #[arg(long)]
    pub llm: bool,
    /// The LLM's model name (else KERNELPRO_LLM_MODEL).
    #[arg(long, value_name = "NAME", requires = "llm")]
    pub llm_model: Option<String>,
    /// The LLM's base URL (else KERNELPRO_LLM_ENDPOINT, else the provider's own).
    #[arg(long, value_name = "URL", requires = "llm")]
    pub llm_endpoint: Option<String>,
    /// `openai` (also vLLM, Ollama, llama.cpp servers) or `anthropic` (else KERNELPRO_LLM_PROVIDER, else openai).
    #[arg(long, value_name = "PROVIDER", value_parser = ["openai", "anthropic"], requires = "llm")]
    pub llm_provider: Option<String>,
    /// Seconds before a hung candidate is killed.
    #[arg(long, default_value_t = 10)]
    pub timeout: u64,
    #[arg(long)]
    pub runner: Option<String>,
    /// GPUs to run candidates on in parallel, e.g. `0,1,2` (one job per GPU at
    /// a time; the original's baseline runs on the first).
    #[arg(long, value_name = "LIST", value_parser = parse_devices, allow_hyphen_values = true)]
    pub devices: Option<Devices>,
    /// Skip the ~1 s energy measurement per candidate (rank by time alone).
    #[arg(long)]
    pub no_energy: bool,
    /// Skip profiling the original with ncu before the search (recipes then follow the static findings only)
    #[arg(long)]
    pub no_profile: bool,
    /// Read the original's profile from ncu pages recorded with `kernelpro profile --save-exports DIR` instead of running ncu
    #[arg(long, value_name = "DIR")]
    pub profile_import: Option<PathBuf>,
    /// Write the optimized file here (the input file is never changed).
    #[arg(long, conflicts_with = "apply")]
    pub out: Option<PathBuf>,
    /// Apply the result to FILE itself when the search ends, onto the file as it is then:
    /// edits made meanwhile elsewhere in it are kept; if the lines the result replaces
    /// changed, nothing is written and the reason is given
    #[arg(long)]
    pub apply: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub compile: CompileArgs,
}

/// Distinct CUDA device indices, at least one.
#[derive(Debug, Clone, PartialEq)]
pub struct Devices(pub Vec<u32>);

/// `0,1,2`.
fn parse_devices(list: &str) -> Result<Devices, String> {
    let mut devices = Vec::new();
    for item in list.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!("`{list}` has an empty entry: write device indices separated by commas, e.g. 0,1,2"));
        }
        let d: u32 = item.parse().map_err(|_| {
            format!("`{item}` is not a device index: write device indices separated by commas, e.g. 0,1,2")
        })?;
        if devices.contains(&d) {
            return Err(format!("device {d} is listed twice: each GPU runs one job at a time"));
        }
        devices.push(d);
    }
    Ok(Devices(devices))
}

/// `gpu`, `stub:S` or `stub:S:L` with finite, positive speedups.
fn parse_evaluator(value: &str) -> Result<String, String> {
    let speedup = |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0);
    let ok = match value.strip_prefix("stub:") {
        None => value == "gpu",
        Some(rest) => match rest.split_once(':') {
            Some((s, l)) => speedup(s).is_some() && speedup(l).is_some(),
            None => speedup(rest).is_some(),
        },
    };
    if ok {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "`{value}` is not an evaluator: write `gpu`, or `stub:SPEEDUP` (a positive number, e.g. stub:1.5), or stub:SPEEDUP:LAUNCH_SPEEDUP"
        ))
    }
}

/// The LLM settings from the arguments and the environment, or what is
/// missing for `--llm` to ever work (said before any search starts).
fn llm_settings(args: &OptimizeArgs) -> Result<kernelpro_config::settings::LlmSettings, String> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let mut llm = kernelpro_config::settings::LlmSettings { enabled: args.llm, ..Default::default() };
    if !args.llm {
        return Ok(llm);
    }
    llm.provider =
        args.llm_provider.clone().or_else(|| env("KERNELPRO_LLM_PROVIDER")).unwrap_or_else(|| "openai".into());
    if !["openai", "anthropic"].contains(&llm.provider.as_str()) {
        return Err(format!("KERNELPRO_LLM_PROVIDER is `{}`: write openai or anthropic", llm.provider));
    }
    llm.endpoint = args.llm_endpoint.clone().or_else(|| env("KERNELPRO_LLM_ENDPOINT"));
    llm.model = args.llm_model.clone().or_else(|| env("KERNELPRO_LLM_MODEL"));
    if llm.model.is_none() {
        return Err("--llm needs the model to ask: give --llm-model NAME or set KERNELPRO_LLM_MODEL \
             (with KERNELPRO_LLM_KEY for its key, and --llm-endpoint URL for a server other than the provider's)"
            .into());
    }
    let local = llm.endpoint.as_deref().is_some_and(|e| {
        let host = e.split("://").nth(1).unwrap_or(e).split(['/', ':']).next().unwrap_or("");
        ["localhost", "127.0.0.1", "[", "::1"].iter().any(|h| host.starts_with(h))
    });
    if kernelpro_llm::ApiKey::from_env().is_none() && !local {
        return Err(format!(
            "--llm needs an API key for {}: set {} (a local server given with --llm-endpoint may need none)",
            llm.endpoint.as_deref().unwrap_or(&llm.provider),
            kernelpro_llm::KEY_ENV
        ));
    }
    Ok(llm)
}

/// Whether `out` names the file `input` (the same path, a symlink to it or a hard link).
fn same_file(input: &Path, out: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(input), std::fs::metadata(out)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        // A path that does not exist yet is another file, unless it spells the input's.
        _ => std::path::absolute(input).ok() == std::path::absolute(out).ok(),
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum StrategyArg {
    Mcts,
    Greedy,
    Random,
}

pub async fn run(args: &OptimizeArgs) -> ExitCode {
    if let Some(out) = &args.out
        && same_file(&args.file, out)
    {
        eprintln!(
            "kernelpro optimize: --out {} is the input file itself; the input is changed only by --apply: give another path",
            out.display()
        );
        return ExitCode::from(2);
    }
    let llm = match llm_settings(args) {
        Ok(llm) => llm,
        Err(e) => {
            eprintln!("kernelpro optimize: {e}");
            return ExitCode::from(2);
        }
    };
    let text = match crate::check::read_text(&args.file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("kernelpro optimize: {}: {e}", args.file.display());
            return ExitCode::from(1);
        }
    };
    let mut settings = args.compile.settings().with_projects_of(&[&args.file]);
    settings.optimize.budget = args.budget;
    settings.optimize.time_secs = args.time;
    settings.optimize.evaluator = args.evaluator.clone();
    settings.run_timeout_secs = args.timeout;
    settings.llm = llm;
    settings.optimize.energy = !args.no_energy;
    settings.optimize.profile_original = !args.no_profile;
    if let Some(devices) = &args.devices {
        settings.optimize.devices = devices.0.clone();
    }
    if let Some(r) = &args.runner {
        settings.runner = r.split_whitespace().map(String::from).collect();
    }
    let started_from = text.clone();
    let req = OptimizeRequest {
        path: args.file.clone(),
        text,
        kernel: args.kernel.clone(),
        settings,
        strategy: match args.strategy {
            StrategyArg::Mcts => Strategy::Mcts,
            StrategyArg::Greedy => Strategy::Greedy,
            StrategyArg::Random => Strategy::Random,
        },
        seed: args.seed,
        exe: std::env::current_exe().unwrap_or_else(|_| "kernelpro".into()),
        llm_key: kernelpro_llm::ApiKey::from_env(),
        profile_import: args.profile_import.clone(),
        recipes: None,
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("stopping: the best result so far follows");
            on_ctrl_c.cancel();
        }
    });
    let handle = tokio::runtime::Handle::current();
    // With the debug log on (--verbose), its lines say the progress; a line redrawn with \r would cut them.
    let quiet = args.json || tracing::enabled!(tracing::Level::DEBUG);
    let result = tokio::task::spawn_blocking(move || {
        optimize(&req, handle, cancel, |p| {
            if !quiet {
                eprint!("\r{}/{} evaluations, best {:.2}x   ", p.evaluations, p.max_evaluations, p.best_speedup);
            }
        })
    })
    .await
    .map_err(|e| format!("the search thread failed: {e}"))
    .and_then(|r| r.map_err(|e| e.to_string()));
    if !quiet {
        eprintln!();
    }
    match result {
        Ok(out) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&out).expect("json"));
            } else {
                print!("{}", report(&out));
            }
            if let (Some(path), Some(text)) = (&args.out, &out.new_text)
                && let Err(e) = if same_file(&args.file, path) {
                    Err(std::io::Error::other("it is now the input file itself (a link made during the search)"))
                } else {
                    std::fs::write(path, text)
                }
            {
                eprintln!("kernelpro optimize: cannot write {}: {e}", path.display());
                return ExitCode::from(1);
            }
            if args.apply
                && let Err(e) = apply_in_place(&args.file, &started_from, &out)
            {
                eprintln!("kernelpro optimize: {} was not changed: {e}", args.file.display());
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kernelpro optimize: {e}");
            ExitCode::from(1)
        }
    }
}

/// Writes the result into the input file, re-based onto its text now (the
/// search took minutes; the user may have kept editing).
fn apply_in_place(file: &std::path::Path, started_from: &str, out: &OptimizeOutcome) -> anyhow::Result<()> {
    if out.edit.is_none() {
        return Ok(());
    }
    let made = out.line_edits();
    let now = std::fs::read_to_string(file)?;
    let edits = kernelpro_session::rebase(started_from, &made, &now)?;
    // Write beside it, then rename: an interrupted write never leaves half a file.
    let tmp = file.with_extension("cu.kernelpro-tmp");
    std::fs::write(&tmp, kernelpro_session::apply(&now, &edits))?;
    std::fs::rename(&tmp, file)?;
    Ok(())
}

fn report(o: &OptimizeOutcome) -> String {
    let mut s = format!("{}\n", o.title);
    s.push_str(&format!("original {:.4} ms", o.original_ms));
    if let Some(b) = o.best_ms {
        s.push_str(&format!(" → best {b:.4} ms"));
    }
    if let (Some(a), Some(b)) = (o.original_energy_j, o.best_energy_j) {
        s.push_str(&format!(", energy {a:.4} J → {b:.4} J per launch"));
    }
    s.push_str(&format!("; {} evaluations, stopped: {}\n", o.evaluations, o.stop));
    if !o.devices.is_empty() {
        let list: Vec<String> = o.devices.iter().map(u32::to_string).collect();
        s.push_str(&format!("devices: {}\n", list.join(", ")));
    }
    if !o.steps.is_empty() {
        s.push_str("best path:\n");
        for (i, st) in o.steps.iter().enumerate() {
            s.push_str(&format!("  {}. {st}\n", i + 1));
        }
    }
    if !o.tried.is_empty() {
        s.push_str("tried:\n");
        for (i, t) in o.tried.iter().enumerate() {
            let result = match t.speedup {
                Some(x) => format!("{x:.2}x"),
                None => format!("{:?}", t.outcome),
            };
            let detail = if t.detail.is_empty() { String::new() } else { format!(": {}", t.detail) };
            let mut variant = match o.tried_variants.get(i) {
                Some(v) if !v.is_empty() => format!(" [{v}]"),
                _ => String::new(),
            };
            if let Some(p) = &t.point {
                variant.push_str(&format!(" {{{p}}}"));
            }
            s.push_str(&format!("  {}{variant} → {result}{detail}\n", t.recipe));
        }
    }
    for n in &o.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    if let Some(e) = &o.edit {
        s.push_str(&format!("edit: lines {}..{} become:\n{}", e.start_line + 1, e.end_line, e.text));
    }
    for e in &o.launch_site_edits {
        s.push_str(&format!("edit (launch site): lines {}..{} become:\n{}", e.start_line + 1, e.end_line, e.text));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::parse_devices;
    use clap::Parser;

    fn parse(devices: &str) -> Result<Option<Vec<u32>>, String> {
        let argv = ["kernelpro", "optimize", "k.cu", "--kernel", "k", "--devices", devices];
        match crate::Cli::try_parse_from(argv) {
            Ok(crate::Cli { command: Some(crate::Command::Optimize(args)), .. }) => Ok(args.devices.map(|d| d.0)),
            Ok(_) => Err("not the optimize command".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn devices_take_a_comma_separated_list() {
        assert_eq!(parse("0,1,2"), Ok(Some(vec![0, 1, 2])));
        assert_eq!(parse("3"), Ok(Some(vec![3])));
        assert_eq!(parse_devices(" 1, 0 ").map(|d| d.0), Ok(vec![1, 0]));
    }

    #[test]
    fn a_bad_devices_value_is_rejected_with_a_clear_error() {
        for (bad, says) in [
            ("0,gpu1", "`gpu1` is not a device index"),
            ("-1", "`-1` is not a device index"),
            ("0,,1", "has an empty entry"),
            ("", "has an empty entry"),
            ("1,1", "device 1 is listed twice"),
        ] {
            let err = parse(bad).expect_err(bad);
            assert!(err.contains("--devices") && err.contains(says), "{bad:?}: {err}");
        }
    }
}
