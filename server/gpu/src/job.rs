//! What the parent asks the worker to do, and what comes back (both JSON).

use kernelpro_spec::LaunchSpec;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
    /// Timed launches (at least [`MIN_TIMED_RUNS`] are made).
    pub runs: u32,
    /// Write a scratch buffer of twice the L2 size before each timed launch.
    pub flush_l2: bool,
    /// Length of the launch loop over which NVML's energy counter is read; 0 = no energy.
    pub energy_window_ms: u32,
}

pub const MIN_TIMED_RUNS: u32 = 20;

impl Job {
    /// A job with the default measurement settings.
    pub fn new(kernel: KernelJob) -> Job {
        Job { device: 0, kernel, reference: None, warmup: 3, runs: 50, flush_l2: true, energy_window_ms: 1000 }
    }
}

/// Per-launch times in milliseconds, from CUDA events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub runs: u32,
    pub warmup: u32,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
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
    pub joules_per_launch: f64,
    pub average_watts: f64,
    pub launches: u64,
    pub window_s: f64,
}

/// A summary of one output buffer after the first launch on fresh inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checksum {
    pub name: String,
    pub sum: f64,
    pub abs_sum: f64,
    /// Elements still NaN (floats) or the 0x7f sentinel (integers): likely never written.
    pub unwritten: u64,
    /// FNV-1a of the bytes, for exact identity.
    pub fnv1a: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRun {
    pub function: String,
    pub timing: Timing,
    pub clocks: Option<Clocks>,
    /// `Err` says why energy could not be measured.
    pub energy: Result<Energy, String>,
    pub outputs: Vec<Checksum>,
    /// Bytes of all buffers (in and out read or written once, inout twice) over the median time.
    pub dram_gbps_estimate: f64,
    /// From `op = gemm M N K`, when given.
    pub tflops: Option<f64>,
}

/// The worst element of one compared buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    pub index: u64,
    pub reference: f64,
    pub got: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferComparison {
    pub name: String,
    pub rtol: f64,
    pub atol: f64,
    /// Elements outside the tolerance.
    pub bad: u64,
    pub count: u64,
    /// The element with the largest error beyond tolerance (`None` when all pass).
    pub worst: Option<Mismatch>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    pub device_name: String,
    pub compute_capability: (i32, i32),
    pub kernel: KernelRun,
    pub reference: Option<KernelRun>,
    /// One entry per output buffer when a reference was given.
    pub comparison: Vec<BufferComparison>,
}

impl JobResult {
    /// Whether every compared output is within tolerance (true when nothing was compared).
    pub fn correct(&self) -> bool {
        self.comparison.iter().all(|c| c.bad == 0)
    }
}
