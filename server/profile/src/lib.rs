//! Nsight Compute for KernelPro: parse the CSV exports, triage each kernel
//! (stage 1), run the micro-profiling tools of its class (stage 2).
//! Pure functions over text; the core crate runs ncu.
#![forbid(unsafe_code)]

pub mod csv_pages;
pub mod cupti;
pub mod ncu_args;
pub mod peaks;
pub mod tools;
pub mod triage;

pub use csv_pages::{
    AtomicSpace, KernelProfile, Metric, SassRow, SourceLine, SourcePage, Value, parse_details, parse_raw, parse_source,
};
pub use tools::{Thresholds, Tool, ToolInput, select_tools, stage2_args};
pub use triage::{Class, Triage, TriageThresholds, triage};
