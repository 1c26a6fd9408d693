//! What a search asks of the GPU (issue 34), counted on the CPU: the GPU
//! evaluator runs for real (real nvcc compiles, the long-lived worker session,
//! the held-out checks) against an emulated GPU worker
//! (`kernelpro-optimize-emulated-gpu`: the original 1 ms a launch, every
//! candidate 0.5 ms, all correct), which logs each job. The energy window
//! (about a second a job on a GPU) is spent on the baseline and the candidate
//! offered only, and a launch-changing candidate runs under the original
//! launch once, when it is about to be offered, not once per candidate.

use kernelpro_config::settings::Settings;
use kernelpro_optimize::{EvaluatorChoice, OptimizeRequest, launch_changes, optimize_with};
use kernelpro_search::Strategy;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

fn request(log: &Path, energy: bool) -> OptimizeRequest {
    request_env(log, energy, &[])
}

fn request_env(log: &Path, energy: bool, env: &[&str]) -> OptimizeRequest {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/saxpy.cu");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut settings = Settings { trusted: true, ..Default::default() };
    settings.optimize.time_secs = 600;
    settings.optimize.budget = 5;
    settings.optimize.energy = energy;
    settings.optimize.profile_original = false;
    settings.runner = vec!["env".into(), format!("KERNELPRO_EMULATED_GPU_LOG={}", log.display())];
    settings.runner.extend(env.iter().map(|e| e.to_string()));
    OptimizeRequest {
        path,
        text,
        kernel: "saxpy".into(),
        settings,
        strategy: Strategy::Greedy,
        seed: 0,
        exe: env!("CARGO_BIN_EXE_kernelpro-optimize-emulated-gpu").into(),
        llm_key: None,
        profile_import: None,
        recipes: None,
    }
}

#[derive(Debug)]
struct Job {
    original: bool,
    seed: u64,
    launch: (serde_json::Value, serde_json::Value),
    energy_window_ms: u64,
    compare: bool,
}

fn jobs(log: &Path) -> Vec<Job> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Job {
                original: v["original"].as_bool().unwrap(),
                seed: v["seed"].as_u64().unwrap(),
                launch: (v["grid"].clone(), v["block"].clone()),
                energy_window_ms: v["energy_window_ms"].as_u64().unwrap(),
                compare: v["compare"].as_bool().unwrap(),
            }
        })
        .collect()
}

#[test]
fn energy_windows_and_old_launch_runs_are_spent_on_the_offered_candidate_only() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("jobs.jsonl");
    let req = request(&log, true);
    let out = optimize_with(&req, EvaluatorChoice::Gpu, rt.handle().clone(), CancellationToken::new(), |_| {}).unwrap();
    let jobs = jobs(&log);
    eprintln!("{}: {:?}\n{:#?}\n{:?}", out.title, out.pipeline, jobs, out.notes);
    assert!(out.evaluations >= 4, "{out:?}");
    assert!(out.edit.is_some() && (out.speedup - 2.0).abs() < 1e-9, "{}", out.title);
    assert_eq!(out.pipeline.gpu_jobs as usize, jobs.len(), "every GPU job went to the worker");

    // The baseline and the offered candidate's first held-out job measure energy; nothing else does.
    let windows: Vec<&Job> = jobs.iter().filter(|j| j.energy_window_ms > 0).collect();
    assert_eq!(windows.len(), 2, "{windows:?}");
    assert!(windows[0].original && !windows[0].compare, "the baseline first: {windows:?}");
    assert!(!windows[1].original && windows[1].compare && windows[1].seed != jobs[0].seed, "{windows:?}");
    assert_eq!(out.pipeline.energy_windows, 2);
    assert!((out.original_energy_j.unwrap() - 3e-4).abs() < 1e-12, "{:?}", out.original_energy_j);
    assert!((out.best_energy_j.unwrap() - 1.5e-4).abs() < 1e-12, "the offered one's: {:?}", out.best_energy_j);

    // The search's candidates: one job each (verify and time), on the search's seed.
    let search_seed = jobs[0].seed;
    let on_search_seed = jobs.iter().filter(|j| !j.original && j.seed == search_seed).count();
    let held_out = jobs.iter().filter(|j| j.seed != search_seed).count();
    assert_eq!(held_out, 2, "two held-out seeds for the offered candidate: {jobs:?}");
    // Under the original launch: only the offered candidate, when it changes the launch.
    let offered = out.new_text.as_deref().unwrap();
    let changes = !launch_changes(&req.text, offered, "saxpy").is_empty();
    assert_eq!(out.pipeline.old_launch_runs, u64::from(changes), "{:?}", out.pipeline);
    assert_eq!(on_search_seed, out.evaluations + out.pipeline.old_launch_runs as usize, "{jobs:?}");
    if changes {
        let old = jobs.iter().filter(|j| !j.original && j.launch == jobs[0].launch && j.seed == search_seed);
        assert!(old.count() >= 1, "the offered candidate ran under the original launch: {jobs:?}");
        assert!(out.notes.iter().any(|n| n.contains("also run under the old launch")), "{:?}", out.notes);
    }
}

#[test]
fn without_energy_no_job_has_an_energy_window() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("jobs.jsonl");
    let mut req = request(&log, false);
    req.settings.optimize.budget = 2;
    let out = optimize_with(&req, EvaluatorChoice::Gpu, rt.handle().clone(), CancellationToken::new(), |_| {}).unwrap();
    let jobs = jobs(&log);
    assert!(out.edit.is_some(), "{}", out.title);
    assert!(jobs.iter().all(|j| j.energy_window_ms == 0), "{jobs:?}");
    assert_eq!((out.pipeline.energy_windows, out.original_energy_j, out.best_energy_j), (0, None, None));
}

/// The search no longer runs each launch-changing candidate under the original
/// launch, so the check before an offer must hold: here every candidate is
/// wrong under the original launch (those keeping it fail in the search, the
/// others in that check), and none is offered.
#[test]
fn a_candidate_wrong_under_the_original_launch_is_never_offered() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("jobs.jsonl");
    let mut req = request_env(&log, false, &["KERNELPRO_EMULATED_GPU_WRONG_UNDER_OLD_LAUNCH=1"]);
    req.settings.optimize.budget = 6;
    let out = optimize_with(&req, EvaluatorChoice::Gpu, rt.handle().clone(), CancellationToken::new(), |_| {}).unwrap();
    let jobs = jobs(&log);
    eprintln!("{}: {:?}\n{:?}\n{:?}", out.title, out.pipeline, out.tried, out.notes);
    assert!(out.edit.is_none(), "{}", out.title);
    assert!(out.tried.iter().any(|t| t.recipe != "original" && t.speedup.is_some()), "some verified in the search");
    // One candidate of each form (GridStrideMap; TuneParameter on top of it) was run under the
    // original launch, not every point of it, and none reached the held-out seeds.
    assert!((1..=2).contains(&out.pipeline.old_launch_runs), "{:?}", out.pipeline);
    assert_eq!(jobs.iter().filter(|j| j.seed != jobs[0].seed).count(), 0, "{jobs:?}");
    assert!(out.notes.iter().any(|n| n.contains("under the original launch")), "{:?}", out.notes);
}

/// A candidate the driver refuses to launch under the original launch (its registers or
/// `__launch_bounds__` do not fit the old block) cannot give a wrong result there: it is offered,
/// and its note says that host code left as it was gets the launch error.
#[test]
fn a_candidate_that_cannot_launch_under_the_original_launch_is_offered_with_a_warning() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("jobs.jsonl");
    let mut req = request_env(&log, false, &["KERNELPRO_EMULATED_GPU_REFUSE_OLD_LAUNCH=1"]);
    req.settings.optimize.budget = 6;
    let out = optimize_with(&req, EvaluatorChoice::Gpu, rt.handle().clone(), CancellationToken::new(), |_| {}).unwrap();
    eprintln!("{}: {:?}\n{:?}", out.title, out.pipeline, out.notes);
    let offered = out.new_text.as_deref().expect("a launch-changing candidate is offered");
    assert!(!launch_changes(&req.text, offered, "saxpy").is_empty(), "{offered}");
    assert!((out.speedup - 4.0).abs() < 1e-9, "{}", out.title);
    assert!(
        out.notes.iter().any(|n| n.contains("does not launch at all (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)")),
        "{:?}",
        out.notes
    );
    assert!(!out.notes.iter().any(|n| n.contains("gave the same output there")), "{:?}", out.notes);
}
