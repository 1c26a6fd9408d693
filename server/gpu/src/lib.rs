//! The GPU harness: runs one kernel (and optionally a reference) with the
//! inputs its launch spec describes, verifies the outputs and times it.
//!
//! The server side builds a [`Job`] and calls [`run_job`], which runs the work
//! in a child process (`kernelpro __gpu-worker`, whose `main` calls
//! [`worker_main`]) under a timeout, optionally through a runner prefix such
//! as `srun --gres=gpu:1 --` or `ssh gpu-box --`. Illegal addresses, hangs and
//! driver errors end the child, never the server.

mod data;
mod job;
mod metrics;
mod nvml;
mod process;
mod worker;

pub use data::{SplitMix64, bf16_bits_to_f32, checksum, compare, f16_bits_to_f32, f32_to_bf16_bits, f32_to_f16_bits, fill};
pub use job::*;
pub use metrics::flops;
pub use process::{DEFAULT_TIMEOUT, HarnessError, WORKER_SUBCOMMAND, run_job};
pub use worker::{NO_DRIVER, execute, worker_main};
