//! The GPU harness: runs one kernel (and optionally a reference) with the
//! inputs its launch spec describes, verifies the outputs and times it.
//!
//! The server side builds a [`Job`] and calls [`run_job`], which runs the work
//! in a child process (`kernelpro __gpu-worker`, whose `main` calls
//! [`worker_main`]) under a timeout, optionally through a runner prefix such
//! as `srun --gres=gpu:1 --` or `ssh gpu-box --`. Illegal addresses, hangs and
//! driver errors end the child, never the server.
//!
//! Inputs are generated, outputs summed and compared on the GPU by the
//! harness's own kernels (device.cu, embedded as PTX), from the same
//! counter-based generator as the host's [`fill`]: a job over many GiB needs
//! no host copies, and its set-up is allowed time in proportion to its bytes
//! ([`Job::setup_allowance`]) on top of the kernel timeout. With a reference
//! (the original), the original runs up to [`ORIGINAL_RUNS`] times on the same
//! inputs; where its outputs differ (float atomics), candidates are accepted
//! within [`VARIATION_MULTIPLE`] times that variation ([`tolerance_used`]).
//!
//! Runners: the prefix is put before `EXE __gpu-worker`, and the job travels
//! on stdin, so `srun --gres=gpu:1 --` (Slurm) and `ssh gpu-box --` both work
//! when the cubin path is visible on the far side (a shared file system) or
//! the job carries PTX. On timeout the local process group is killed (the child runs through
//! `kernelpro_runner::run_tool`, as every child does); with ssh
//! the remote worker ends when its connection drops. Several GPUs of one
//! machine: give each job its own `Job::device` and run one `run_job` per
//! device at a time. Energy is NVML's total-energy counter over a loop of
//! `energy_window_ms` (1 s by default; 0 turns it off).
// Every `unsafe` block says why it is sound (CI runs clippy with -D warnings).
#![deny(clippy::undocumented_unsafe_blocks)]

mod data;
mod device;
mod energy_field;
mod floats;
mod job;
mod metrics;
mod nvml;
mod process;
mod session;
mod verify;
mod worker;

pub use data::{
    FillPlan, SplitMix64, bf16_bits_to_f32, checksum, compare, elem_code, element, f16_bits_to_f32, f32_to_bf16_bits,
    f32_to_f16_bits, fill, pair_stats,
};
pub use job::*;
pub use metrics::flops;
pub use process::{DEFAULT_TIMEOUT, HarnessError, WORKER_SUBCOMMAND, run_job};
pub use session::{
    Answer, Backend, Evaluation, OPEN_TIMEOUT, Open, Request, WorkerSession, parse_open, serve, serve_stdin,
};
pub use verify::{
    MAX_REORDER_VARIATION, ORIGINAL_RUNS, PairStats, ToleranceBasis, VARIATION_MULTIPLE, Variation, tolerance_used,
};
pub use worker::{EARLY_DEVICE_ENV, NO_DRIVER, Resident, execute, worker_main};
