//! An emulated GPU worker session for the CPU tests of the session protocol
//! (`tests/session.rs`): it speaks `kernelpro __gpu-worker`'s session protocol
//! through the same [`serve`], with a [`Backend`] that runs nothing. What a
//! kernel does is named by its function:
//! `ms_<X>` takes X ms a launch (the original: `original`, 1 ms), `wrong`
//! differs from the original, `fail` fails as a faulting kernel does, `crash`
//! kills the process, `hang` never ends. Each answer's device name says which
//! process served it, how many evaluations it served, and how often the
//! original was run (once per input seed), so a test sees what was reused.

use kernelpro_gpu::{
    Backend, BufferComparison, Checksum, Evaluation, JobResult, KernelRun, Open, Phases, Timing, ToleranceBasis,
    serve_stdin,
};

struct Emulated {
    evaluations: u32,
    original_seeds: Vec<u64>,
}

fn run(function: &str, ms: f64) -> KernelRun {
    KernelRun {
        function: function.into(),
        timing: Timing { runs: 20, warmup: 3, median_ms: ms, min_ms: ms, max_ms: ms, stddev_ms: 0.0 },
        clocks: None,
        energy: Err("emulated".into()),
        outputs: vec![Checksum { name: "y".into(), sum: 1.0, abs_sum: 1.0, unwritten: 0, hash: "00".into() }],
        dram_gbps_estimate: 0.0,
        tflops: None,
    }
}

impl Backend for Emulated {
    fn open(open: &Open) -> Result<(Self, String), String> {
        if open.reference.function == "fail_open" {
            return Err("emulated: the GPU could not be opened".into());
        }
        Ok((Emulated { evaluations: 0, original_seeds: Vec::new() }, "emulated".into()))
    }

    fn evaluate(&mut self, e: &Evaluation) -> Result<JobResult, String> {
        self.evaluations += 1;
        let f = e.kernel.function.as_str();
        match f {
            "crash" => std::process::abort(),
            "hang" => loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
            },
            "fail" => return Err("launching `fail` failed with CUDA_ERROR_ILLEGAL_ADDRESS (emulated)".into()),
            _ => {}
        }
        let seed = e.kernel.launch.seed;
        if e.compare && !self.original_seeds.contains(&seed) {
            self.original_seeds.push(seed);
        }
        let ms = f.strip_prefix("ms_").and_then(|x| x.parse().ok()).unwrap_or(1.0);
        let bad = u64::from(f == "wrong");
        let comparison = if e.compare {
            vec![BufferComparison {
                name: "y".into(),
                rtol: 1e-5,
                atol: 1e-5,
                bad,
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
            device_name: format!(
                "emulated pid={} evaluations={} original_runs={}",
                std::process::id(),
                self.evaluations,
                self.original_seeds.len()
            ),
            compute_capability: (9, 0),
            kernel: run(f, ms),
            reference: (e.compare && e.time_reference).then(|| run("original", 1.0)),
            comparison,
            phases: Phases::default(),
        })
    }
}

fn main() {
    std::process::exit(serve_stdin::<Emulated>());
}
