//! `kernelpro run`: launch one kernel on the GPU with its launch spec, time it,
//! and (with --reference) check its outputs against another kernel.

use crate::CompileArgs;
use kernelpro_core::analysis::Analyzer;
use kernelpro_gpu::{JobResult, KernelRun};
use kernelpro_measure::harness::{self, KernelSource, RunOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

#[derive(clap::Args)]
pub struct RunArgs {
    pub file: PathBuf,
    /// The kernel to run (default: the only one with a launch spec).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Compare against this kernel: `NAME` in the same file, or `FILE.cu[:NAME]`.
    #[arg(long)]
    pub reference: Option<String>,
    #[arg(long, default_value_t = 20)]
    pub runs: u32,
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Skip the ~1 s NVML energy measurement.
    #[arg(long)]
    pub no_energy: bool,
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Seconds before a hung kernel is killed.
    #[arg(long, default_value_t = 10)]
    pub timeout: u64,
    /// Prefix for the worker command, e.g. "srun --gres=gpu:1 --" (split on spaces).
    #[arg(long)]
    pub runner: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub compile: CompileArgs,
}

pub async fn run(args: &RunArgs) -> ExitCode {
    let mut settings = args.compile.settings().with_projects_of(&[&args.file]);
    settings.run_timeout_secs = args.timeout;
    if let Some(r) = &args.runner {
        settings.runner = r.split_whitespace().map(String::from).collect();
    }
    let text = match crate::check::read_text(&args.file) {
        Ok(t) => t,
        Err(e) => return fail(args.json, &format!("{}: cannot read: {e}", args.file.display())),
    };
    let analyzer = Analyzer::default();
    let cancel = CancellationToken::new();
    let main = KernelSource { path: args.file.clone(), text: text.clone(), kernel: args.kernel.clone() };
    let kernel = match harness::prepare(&main, &settings, &analyzer, &cancel).await {
        Ok(p) => p,
        Err(e) => return fail(args.json, &e),
    };
    let reference = match &args.reference {
        None => None,
        Some(r) => {
            let (path, kernel) = match r.rsplit_once(':').filter(|(f, _)| f.ends_with(".cu") || f.ends_with(".cuh")) {
                Some((file, name)) => (Some(PathBuf::from(file)), Some(name.to_owned())),
                None if r.ends_with(".cu") => (Some(PathBuf::from(r)), None),
                None => (None, Some(r.clone())),
            };
            let src = match path {
                Some(path) => match crate::check::read_text(&path) {
                    Ok(text) => KernelSource { path, text, kernel },
                    Err(e) => return fail(args.json, &format!("reference {}: cannot read: {e}", path.display())),
                },
                None => KernelSource { path: args.file.clone(), text: text.clone(), kernel },
            };
            match harness::prepare(&src, &settings, &analyzer, &cancel).await {
                Ok(p) => Some(p),
                Err(e) => return fail(args.json, &format!("reference: {e}")),
            }
        }
    };
    let opts = RunOptions {
        exe: std::env::current_exe().unwrap_or_else(|_| "kernelpro".into()),
        runs: args.runs,
        warmup: args.warmup,
        energy: !args.no_energy,
        device: args.device,
        // Ctrl-C ends the worker's group through the signal handler (`children::kill_all`).
        cancel: Default::default(),
    };
    match harness::run(&kernel.job, reference.as_ref().map(|r| &r.job), &settings, &opts).await {
        Ok(result) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&result).expect("json"));
            } else {
                print!("{}", report(&result));
            }
            if result.correct() { ExitCode::SUCCESS } else { ExitCode::from(1) }
        }
        Err(e) => fail(args.json, &e.to_string()),
    }
}

/// The error on stderr, and with `--json` also as `{"error": "..."}` on stdout
/// (a script reading the JSON gets JSON, GPU or not).
fn fail(json: bool, message: &str) -> ExitCode {
    eprintln!("kernelpro run: {message}");
    if json {
        println!("{}", serde_json::json!({ "error": message }));
    }
    ExitCode::from(1)
}

pub fn report(r: &JobResult) -> String {
    let mut s = format!("device: {} (sm_{}{})\n", r.device_name, r.compute_capability.0, r.compute_capability.1);
    s.push_str(&kernel_report("kernel", &r.kernel));
    if let Some(reference) = &r.reference {
        s.push_str(&kernel_report("reference", reference));
        s.push_str(&format!(
            "speedup over the reference: {:.2}x\n",
            reference.timing.median_ms / r.kernel.timing.median_ms
        ));
    }
    for note in r.nondeterminism_notes() {
        s.push_str(&format!("{note}\n"));
    }
    for c in &r.comparison {
        match c.worst_note("reference") {
            None if c.bad == 0 => {
                s.push_str(&format!("compare {}: ok, {} elements within {}\n", c.name, c.count, c.tolerance_note()))
            }
            worst => s.push_str(&format!(
                "compare {}: MISMATCH, {} of {} elements outside {}{}\n",
                c.name,
                c.bad,
                c.count,
                c.tolerance_note(),
                worst.map(|w| format!("; {w}")).unwrap_or_default()
            )),
        }
    }
    let p = &r.phases;
    s.push_str(&format!(
        "harness: set-up {:.0} ms (context, code, buffers), fills {:.0} ms, checks {:.0} ms, timing {:.0} ms\n",
        p.setup_ms, p.fill_ms, p.verify_ms, p.timing_ms
    ));
    s
}

fn kernel_report(label: &str, k: &KernelRun) -> String {
    let t = &k.timing;
    let mut s = format!(
        "{label} {}:\n  time      {:.4} ms median (min {:.4}, max {:.4}, sd {:.4}) over {} runs after {} warm-up, L2 flushed\n",
        k.function, t.median_ms, t.min_ms, t.max_ms, t.stddev_ms, t.runs, t.warmup
    );
    if let Some(c) = &k.clocks {
        s.push_str(&format!("  clocks    SM {} MHz, memory {} MHz\n", c.sm_mhz, c.mem_mhz));
    }
    s.push_str(&format!("  bandwidth {:.0} GB/s (bytes of all buffers over the median time)\n", k.dram_gbps_estimate));
    if let Some(tf) = k.tflops {
        s.push_str(&format!("  compute   {tf:.2} TFLOP/s\n"));
    }
    match &k.energy {
        Ok(e) => s.push_str(&format!(
            "  energy    {:.4} J per launch at {:.0} W ({} launches over {:.2} s)\n",
            e.joules_per_launch, e.average_watts, e.launches, e.window_s
        )),
        Err(why) => s.push_str(&format!("  energy    unavailable: {why}\n")),
    }
    for o in &k.outputs {
        s.push_str(&format!(
            "  output {}: sum {:.6e}, |sum| {:.6e}, unwritten {}\n",
            o.name, o.sum, o.abs_sum, o.unwritten
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelpro_gpu::{BufferComparison, Checksum, Phases, Timing, ToleranceBasis, VARIATION_MULTIPLE, Variation};

    fn kernel(function: &str, sum: f64) -> KernelRun {
        let timing = Timing { runs: 20, warmup: 3, median_ms: 0.5, min_ms: 0.4, max_ms: 0.6, stddev_ms: 0.01 };
        let outputs = vec![Checksum { name: "out".into(), sum, abs_sum: sum.abs(), unwritten: 0, hash: "0".into() }];
        KernelRun {
            function: function.into(),
            timing,
            clocks: None,
            energy: Err("off".into()),
            outputs,
            dram_gbps_estimate: 134.0,
            tflops: None,
        }
    }

    /// What `run --reference` prints for a float-atomic original: that it is
    /// nondeterministic, by how much, and the tolerance the comparison used.
    #[test]
    fn a_nondeterministic_original_is_reported_as_such() {
        let variation = Variation { runs: 4, differing: 1, one_nan: 0, max_abs_diff: 0.25, max_abs: 323.5 };
        let comparison = vec![BufferComparison {
            name: "out".into(),
            rtol: 1e-5,
            atol: VARIATION_MULTIPLE * 0.25,
            bad: 0,
            count: 1,
            worst: None,
            spec_rtol: 1e-5,
            spec_atol: 1e-6,
            basis: ToleranceBasis::OriginalVariation,
            original_variation: Some(variation),
        }];
        let phases = Phases { setup_ms: 310.0, fill_ms: 2.0, verify_ms: 9.0, timing_ms: 40.0 };
        let r = JobResult {
            device_name: "H200".into(),
            compute_capability: (9, 0),
            kernel: kernel("sum_blocks", -323.6),
            reference: Some(kernel("sum_atomic", -323.5)),
            comparison,
            phases,
        };
        let text = report(&r);
        let tail: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("speedup")).collect();
        assert_eq!(
            tail.join("\n"),
            "speedup over the reference: 1.00x\n\
             the original is nondeterministic: two runs on the same inputs differ by up to 2.50e-1 (7.7e-4 of its largest value) in `out` (float atomics?)\n\
             compare out: ok, 1 elements within rtol=1e-5 atol=2e0: 8x the original's own run-to-run variation (its 4 runs on the same inputs differ by up to 2.50e-1 (7.7e-4 of its largest value)), wider than the spec's atol=1e-6\n\
             harness: set-up 310 ms (context, code, buffers), fills 2 ms, checks 9 ms, timing 40 ms"
        );
    }
}
