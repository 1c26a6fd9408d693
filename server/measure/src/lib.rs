//! Measurement: profiling with Nsight Compute (`profiling`), the GPU
//! harness's jobs built from an analysis (`harness`), stored baselines
//! (`baseline`), and what can run on this machine (`doctor`).
//!
//! Architecture invariant: no LSP types and no editor named here; every
//! process starts through `kernelpro_runner`.
#![forbid(unsafe_code)]

pub mod baseline;
pub mod cupti;
pub mod doctor;
pub mod harness;
pub mod profiling;
pub mod program;
pub mod reuse;
