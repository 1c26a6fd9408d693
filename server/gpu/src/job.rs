//! What the parent asks the worker to do, and what comes back (both JSON).

use crate::verify::{ToleranceBasis, Variation};
use kernelpro_spec::LaunchSpec;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Compiled code to load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Image {
    /// A `.cubin` (or fatbin) built for the GPU the worker runs on.
    Cubin(PathBuf),
    /// PTX text, JIT-compiled by the driver.
    Ptx(String),
}

/// One kernel to run: its code, its symbol and its resolved launch spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelJob {
    pub image: Image,
    /// The exact symbol in the image (mangled unless `extern "C"`), as ptxas lists it.
    pub function: String,
    pub launch: LaunchSpec,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// CUDA device ordinal; run several jobs with different ordinals to use several GPUs.
    pub device: u32,
    pub kernel: KernelJob,
    /// When set, both kernels run on identical inputs and every output buffer is compared.
    pub reference: Option<KernelJob>,
    pub warmup: u32,
    /// Timed launches (at least [`MIN_TIMED_RUNS`] are made, fewer for a slow kernel: [`timed_runs`]).
    pub runs: u32,
    /// Write a scratch buffer of twice the L2 size before each timed launch.
    pub flush_l2: bool,
    /// Length of the launch loop over which NVML's energy counter is read; 0 = no energy.
    pub energy_window_ms: u32,
    /// Also time the reference (for comparing GPUs: a search spread over
    /// several scales each candidate's time by the original's there).
    #[serde(default = "yes")]
    pub time_reference: bool,
    /// Time a kernel whose outputs were wrong too (`kernelpro run` shows it);
    /// a search skips it, since a wrong candidate's time is never used.
    #[serde(default = "yes")]
    pub time_if_wrong: bool,
    /// The timed launches of one kernel take about this long at most
    /// ([`timed_runs_within`]); a search asks for less than [`TIMING_BUDGET_MS`].
    #[serde(default = "default_timing_budget_ms")]
    pub timing_budget_ms: u32,
}

fn yes() -> bool {
    true
}

fn default_timing_budget_ms() -> u32 {
    TIMING_BUDGET_MS as u32
}

pub const MIN_TIMED_RUNS: u32 = 20;

/// The timed launches of one kernel take about this long at most: a naive
/// softmax at 0.6 s a launch would otherwise spend 14 s per candidate on
/// timing alone, and a search of a minute measures two candidates.
pub const TIMING_BUDGET_MS: f64 = 2000.0;

/// Fewest timed launches of a slow kernel (its median is still a median).
pub const MIN_SLOW_RUNS: u32 = 3;

/// How many launches to time, given what was asked and one warm-up launch's
/// duration: what was asked (at least [`MIN_TIMED_RUNS`]) when that fits
/// [`TIMING_BUDGET_MS`], else as many as fit, but at least [`MIN_SLOW_RUNS`].
pub fn timed_runs(requested: u32, launch_ms: f64) -> u32 {
    timed_runs_within(requested, launch_ms, TIMING_BUDGET_MS)
}

/// [`timed_runs`] with another budget: at most about `budget_ms` of timed launches.
pub fn timed_runs_within(requested: u32, launch_ms: f64, budget_ms: f64) -> u32 {
    let wanted = requested.max(MIN_TIMED_RUNS);
    // No measure (zero or NaN): what was asked.
    if launch_ms.is_nan() || launch_ms <= 0.0 {
        return wanted;
    }
    let fit = (budget_ms / launch_ms).floor().min(u32::MAX as f64) as u32;
    wanted.min(fit.max(MIN_SLOW_RUNS))
}

impl Job {
    /// A job with the default measurement settings.
    pub fn new(kernel: KernelJob) -> Job {
        Job {
            device: 0,
            kernel,
            reference: None,
            warmup: 3,
            runs: 50,
            flush_l2: true,
            energy_window_ms: 1000,
            time_reference: true,
            time_if_wrong: true,
            timing_budget_ms: TIMING_BUDGET_MS as u32,
        }
    }

    /// Bytes of the kernel's buffers.
    pub fn buffer_bytes(&self) -> u64 {
        self.kernel.launch.buffers().map(|b| b.size_bytes()).sum()
    }

    /// Time allowed beyond the kernel timeout for allocating, filling,
    /// checksumming and comparing the buffers: 1 s per GiB. The worker does
    /// all of it on the GPU at hundreds of GB/s, several passes a run; the
    /// margin covers allocation and slower GPUs, so a job's size never eats
    /// the time its kernels are given.
    pub fn setup_allowance(&self) -> Duration {
        Duration::from_secs_f64(self.buffer_bytes() as f64 / (1u64 << 30) as f64)
    }
}

/// Per-launch times in milliseconds, from CUDA events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub runs: u32,
    pub warmup: u32,
    #[serde(with = "crate::floats")]
    pub median_ms: f64,
    #[serde(with = "crate::floats")]
    pub min_ms: f64,
    #[serde(with = "crate::floats")]
    pub max_ms: f64,
    #[serde(with = "crate::floats")]
    pub stddev_ms: f64,
}

/// Clocks read from NVML while the timed launches ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Clocks {
    pub sm_mhz: u32,
    pub mem_mhz: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Energy {
    #[serde(with = "crate::floats")]
    pub joules_per_launch: f64,
    #[serde(with = "crate::floats")]
    pub average_watts: f64,
    pub launches: u64,
    #[serde(with = "crate::floats")]
    pub window_s: f64,
}

/// A summary of one output buffer after the first launch on fresh inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checksum {
    pub name: String,
    #[serde(with = "crate::floats")]
    pub sum: f64,
    #[serde(with = "crate::floats")]
    pub abs_sum: f64,
    /// Elements still NaN (floats) or the 0x7f sentinel (integers): likely never written.
    pub unwritten: u64,
    /// A hash of the bytes, for exact identity (an order-independent sum of
    /// mixed (index, bits) pairs, computed on the GPU: see `data::checksum`).
    pub hash: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRun {
    pub function: String,
    pub timing: Timing,
    pub clocks: Option<Clocks>,
    /// `Err` says why energy could not be measured. In JSON: `energy` and
    /// `energy_error`, one of them null (`energy_field`).
    #[serde(flatten, with = "crate::energy_field")]
    pub energy: Result<Energy, String>,
    pub outputs: Vec<Checksum>,
    /// Bytes of all buffers (in and out read or written once, inout twice) over the median time.
    #[serde(with = "crate::floats")]
    pub dram_gbps_estimate: f64,
    /// From `op = gemm M N K`, when given.
    #[serde(default, with = "crate::floats::option")]
    pub tflops: Option<f64>,
}

/// The worst element of one compared buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    pub index: u64,
    #[serde(with = "crate::floats")]
    pub reference: f64,
    #[serde(with = "crate::floats")]
    pub got: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferComparison {
    pub name: String,
    /// The tolerance used: the spec's, or wider for a nondeterministic original (see `basis`).
    #[serde(with = "crate::floats")]
    pub rtol: f64,
    #[serde(with = "crate::floats")]
    pub atol: f64,
    /// Elements outside the tolerance.
    pub bad: u64,
    pub count: u64,
    /// The element with the largest error beyond tolerance (`None` when all pass).
    pub worst: Option<Mismatch>,
    /// The spec's tolerance for this buffer.
    #[serde(with = "crate::floats")]
    pub spec_rtol: f64,
    #[serde(with = "crate::floats")]
    pub spec_atol: f64,
    /// Where `rtol`/`atol` came from ([`crate::tolerance_used`]).
    pub basis: ToleranceBasis,
    /// How the original's outputs differed between its runs on the same
    /// inputs; `None` when they were identical bits.
    pub original_variation: Option<Variation>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    pub device_name: String,
    pub compute_capability: (i32, i32),
    pub kernel: KernelRun,
    pub reference: Option<KernelRun>,
    /// One entry per output buffer when a reference was given.
    pub comparison: Vec<BufferComparison>,
    /// Where the worker's time went.
    pub phases: Phases,
}

/// Wall-clock milliseconds of the worker's phases.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Phases {
    /// CUDA context, loading the code, allocating the buffers.
    #[serde(with = "crate::floats")]
    pub setup_ms: f64,
    /// Filling the inputs on the GPU, every time (before each correctness and timing run).
    #[serde(with = "crate::floats")]
    pub fill_ms: f64,
    /// Correctness launches, checksums, the original's repeat runs and the comparisons.
    #[serde(with = "crate::floats")]
    pub verify_ms: f64,
    /// Timed launches and the energy loop.
    #[serde(with = "crate::floats")]
    pub timing_ms: f64,
}

impl JobResult {
    /// Whether every compared output is within tolerance (true when nothing was compared).
    pub fn correct(&self) -> bool {
        self.comparison.iter().all(|c| c.bad == 0)
    }

    /// `the original is nondeterministic: …`, one line per output whose original runs differed.
    pub fn nondeterminism_notes(&self) -> Vec<String> {
        self.comparison.iter().filter_map(BufferComparison::nondeterminism_note).collect()
    }
}

#[cfg(test)]
mod timed_runs_tests {
    use super::*;

    #[test]
    fn slow_kernels_get_fewer_timed_runs() {
        assert_eq!(timed_runs(50, 0.2), 50, "a fast kernel: what was asked");
        assert_eq!(timed_runs(5, 0.2), MIN_TIMED_RUNS, "never fewer than the floor when they fit");
        assert_eq!(timed_runs(50, 80.0), 25, "as many as fit in the budget");
        assert_eq!(timed_runs(50, 624.0), MIN_SLOW_RUNS, "a naive softmax: three");
        assert_eq!(timed_runs(50, 0.0), 50, "no warm-up measure: what was asked");
        assert_eq!(timed_runs(50, f64::NAN), 50);
    }

    #[test]
    fn a_search_budget_of_half_a_second_times_a_275_ms_kernel_three_times() {
        assert_eq!(timed_runs_within(20, 275.0, 500.0), MIN_SLOW_RUNS);
        assert_eq!(timed_runs_within(20, 10.0, 500.0), 20);
        assert_eq!(timed_runs_within(20, 50.0, 500.0), 10);
    }
}
