//! The analysis core of KernelPro.
//!
//! Architecture invariant: no LSP types here. The LSP crate and the CLI both
//! call into this crate and convert its plain data at their own seam.

pub mod nvcc_diag;
pub mod process;
pub mod jobs;
pub mod settings;
pub mod settings_doc;
pub mod editor;
pub mod docs;
pub use kernelpro_source as source;
pub use kernelpro_gpu::children;
pub mod toolchain;
pub mod baseline;
pub mod cache;
pub mod compile;
pub mod compile_db;
pub mod nvcc_flags;
pub mod analysis;
pub mod doctor;
pub mod harness;
pub mod install;
pub mod headers;
pub mod hover;
pub mod launch;
pub mod profiling;
pub mod lens;

/// Where KernelPro keeps profiles and baselines between sessions.
pub fn cache_dir() -> std::path::PathBuf {
    dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("kernelpro")
}
