//! `kernelpro profile`: roofline triage then the micro-profiling tools for each
//! kernel's class, printed as findings; `--import` reads recorded ncu pages.

use crate::CompileArgs;
use kernelpro_core::analysis::Analyzer;
use kernelpro_measure::baseline::BaselineStore;
use kernelpro_measure::profiling::{Exports, FileProfileRequest, ProfileReport, analyze_exports, profile_file};
use kernelpro_profile::Thresholds;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

#[derive(clap::Args)]
pub struct ProfileArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub kernel: Option<String>,
    /// `ncu --set full` in one pass instead of the two stages (for comparison).
    #[arg(long)]
    pub full: bool,
    /// Analyse ncu CSV pages recorded elsewhere (stage1_raw.csv / full_raw.csv, src_KERNEL.csv).
    #[arg(long)]
    pub import: Option<PathBuf>,
    /// Keep the exported ncu pages in this folder (read them later with --import).
    #[arg(long)]
    pub save_exports: Option<PathBuf>,
    #[arg(long)]
    pub ncu: Option<PathBuf>,
    /// Which profiler: `auto` (in-process through CUPTI where it builds, else
    /// ncu), `cupti` or `ncu` (the `profileBackend` setting). `--full` is ncu.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// ncu clock control: `none` (the GPU's own clocks) or `base`.
    #[arg(long, default_value = "none")]
    pub clock_control: String,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub compile: CompileArgs,
}

pub async fn run(args: &ProfileArgs) -> ExitCode {
    let text = match crate::check::read_text(&args.file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("kernelpro profile: {}: {e}", args.file.display());
            return ExitCode::from(1);
        }
    };
    let report = match &args.import {
        Some(dir) => Exports::from_dir(dir).and_then(|e| analyze_exports(&e, &text, &Thresholds::default())),
        None => {
            let mut settings = args.compile.settings().with_projects_of(&[&args.file]);
            settings.ncu = args.ncu.clone();
            settings.clock_control = args.clock_control.clone();
            settings.profile_backend = args.backend.clone();
            let req = FileProfileRequest {
                path: args.file.clone(),
                text: text.clone(),
                kernel: args.kernel.clone(),
                full: args.full,
                exe: std::env::current_exe().unwrap_or_else(|_| "kernelpro".into()),
                save_exports: args.save_exports.clone(),
                ready: None,
                last: None,
            };
            profile_file(&req, &settings, &Analyzer::default(), &CancellationToken::new()).await
        }
    };
    let mut report = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kernelpro profile: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(k) = &args.kernel {
        report.kernels.retain(|r| &r.kernel == k);
    }
    let changes = if args.import.is_none() { remember(&args.file, &report) } else { Vec::new() };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"report": report, "changes": changes})).expect("json")
        );
    } else {
        print!("{}", text_report(&args.file, &report));
        for c in changes {
            println!("{c}");
        }
    }
    ExitCode::SUCCESS
}

/// Compares with the last profile of the same file and stores this one.
fn remember(file: &std::path::Path, report: &ProfileReport) -> Vec<String> {
    BaselineStore::in_cache_dir()
        .record(file, report, 5.0)
        .into_iter()
        .map(|c| if c.slower { format!("SLOWER: {}", c.text) } else { c.text })
        .collect()
}

fn text_report(file: &std::path::Path, r: &ProfileReport) -> String {
    let mut s = String::new();
    for k in &r.kernels {
        s.push_str(&format!(
            "{}: {}\n",
            k.kernel,
            k.triage.as_ref().map(|t| t.summary.as_str()).unwrap_or("no SpeedOfLight data: class unknown")
        ));
        for f in &k.findings {
            s.push_str(&crate::check::compiler_line(file, f));
            s.push('\n');
        }
    }
    if r.pass_secs > 0.0 {
        let total = r.pass_secs + r.export_secs;
        if r.backend == "cupti" {
            s.push_str(&format!(
                "profiled in {total:.1} s in-process (CUPTI runs {:.1} s, disassembly {:.1} s)\n",
                r.pass_secs, r.export_secs
            ));
        } else {
            s.push_str(&format!(
                "profiled in {total:.1} s (one ncu pass {:.1} s, source pages {:.1} s)\n",
                r.pass_secs, r.export_secs
            ));
        }
    }
    for n in &r.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}
