//! An emulated GPU worker for the optimizer's CPU tests (`tests/gpu_jobs.rs`):
//! it speaks `kernelpro __gpu-worker`'s session protocol through the same
//! [`serve`], with a [`Backend`] that runs nothing. The original takes 1 ms a
//! launch, every other kernel 0.5 ms, all outputs agree; a job with an energy
//! window reports 0.3 mJ per ms of launch. Started as `env
//! KERNELPRO_EMULATED_GPU_LOG=FILE kernelpro-optimize-emulated-gpu __gpu-worker`
//! (the runner prefix and the worker's argument), it appends one JSON line per
//! job to FILE: whether it was the original, the seed, the launch, the energy
//! window and whether it was compared with the original, so a test counts
//! what the optimizer asked of the GPU. With
//! `KERNELPRO_EMULATED_GPU_WRONG_UNDER_OLD_LAUNCH=1`, a candidate's output is
//! wrong under the original's launch (grid and block); with
//! `KERNELPRO_EMULATED_GPU_REFUSE_OLD_LAUNCH=1` it does not launch there (the
//! driver's out-of-resources refusal), and one under a launch of its own
//! takes 0.25 ms.

use kernelpro_gpu::{
    Backend, BufferComparison, Checksum, Energy, Evaluation, JobResult, KernelJob, KernelRun, Open, Phases, Timing,
    ToleranceBasis, serve_stdin,
};
use std::io::Write;

struct Emulated {
    original: KernelJob,
}

fn run(function: &str, ms: f64, energy_window_ms: u32) -> KernelRun {
    let energy = if energy_window_ms > 0 {
        let window_s = energy_window_ms as f64 / 1e3;
        Ok(Energy {
            joules_per_launch: ms * 3e-4,
            average_watts: 300.0,
            launches: (window_s * 1e3 / ms) as u64,
            window_s,
        })
    } else {
        Err("energy not asked for (energy window 0)".into())
    };
    KernelRun {
        function: function.into(),
        timing: Timing { runs: 20, warmup: 3, median_ms: ms, min_ms: ms, max_ms: ms, stddev_ms: 0.0 },
        clocks: None,
        energy,
        outputs: vec![Checksum { name: "y".into(), sum: 1.0, abs_sum: 1.0, unwritten: 0, hash: "00".into() }],
        dram_gbps_estimate: 0.0,
        tflops: None,
    }
}

impl Backend for Emulated {
    fn open(open: &Open) -> Result<(Self, String), String> {
        Ok((Emulated { original: open.reference.clone() }, "emulated".into()))
    }

    fn evaluate(&mut self, e: &Evaluation) -> Result<JobResult, String> {
        let original = e.kernel.image == self.original.image;
        let launch = &e.kernel.launch;
        if let Ok(path) = std::env::var("KERNELPRO_EMULATED_GPU_LOG") {
            let line = serde_json::json!({
                "original": original,
                "seed": launch.seed,
                "grid": launch.grid,
                "block": launch.block,
                "energy_window_ms": e.energy_window_ms,
                "compare": e.compare,
            });
            let mut log =
                std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| e.to_string())?;
            writeln!(log, "{line}").map_err(|e| e.to_string())?;
        }
        let old_launch = (launch.grid, launch.block) == (self.original.launch.grid, self.original.launch.block);
        let refuse = std::env::var_os("KERNELPRO_EMULATED_GPU_REFUSE_OLD_LAUNCH").is_some();
        if refuse && !original && old_launch {
            return Err(format!(
                "launching `{}` failed with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources requested for launch)",
                e.kernel.function
            ));
        }
        let ms = match (original, refuse && !old_launch) {
            (true, _) => 1.0,
            (false, true) => 0.25,
            (false, false) => 0.5,
        };
        let wrong =
            !original && old_launch && std::env::var_os("KERNELPRO_EMULATED_GPU_WRONG_UNDER_OLD_LAUNCH").is_some();
        let comparison = if e.compare {
            vec![BufferComparison {
                name: "y".into(),
                rtol: 1e-5,
                atol: 1e-5,
                bad: u64::from(wrong),
                count: 4,
                worst: None,
                spec_rtol: 1e-5,
                spec_atol: 1e-5,
                basis: ToleranceBasis::Spec,
                original_variation: None,
            }]
        } else {
            Vec::new()
        };
        Ok(JobResult {
            device_name: "emulated".into(),
            compute_capability: (9, 0),
            kernel: run(&e.kernel.function, ms, e.energy_window_ms),
            reference: (e.compare && e.time_reference).then(|| run("original", 1.0, e.energy_window_ms)),
            comparison,
            phases: Phases::default(),
        })
    }
}

fn main() {
    std::process::exit(serve_stdin::<Emulated>());
}
