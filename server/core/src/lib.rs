//! The analysis core of KernelPro.
//!
//! Architecture invariant: no LSP types here. The LSP crate and the CLI both
//! call into this crate and convert its plain data at their own seam.
#![forbid(unsafe_code)]

pub mod docs;
pub mod editor;
pub mod nvcc_diag;
pub mod settings;
pub mod settings_doc;
pub use kernelpro_runner::{children, jobs, process};
pub use kernelpro_source as source;
pub mod analysis;
pub mod baseline;
pub mod cache;
pub mod compile;
pub mod compile_db;
pub mod doctor;
pub mod harness;
pub mod headers;
pub mod hover;
pub mod install;
pub mod launch;
pub mod lens;
pub mod nvcc_flags;
pub mod profiling;
pub mod toolchain;

/// Where KernelPro keeps profiles and baselines between sessions.
pub fn cache_dir() -> std::path::PathBuf {
    dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("kernelpro")
}
