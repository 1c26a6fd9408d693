//! The analysis core of KernelPro.
//!
//! Architecture invariant: no LSP types here. The LSP crate and the CLI both
//! call into this crate and convert its plain data at their own seam.

pub mod nvcc_diag;
pub mod process;
pub mod settings;
pub mod source;
pub mod toolchain;
