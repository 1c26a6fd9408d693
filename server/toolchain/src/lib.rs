//! The CUDA toolchain: finding the tools (`toolchain`), the flags a compile
//! gets (`nvcc_flags`, `compile_db`), the compile step (`compile`), nvcc's
//! messages (`nvcc_diag`), project headers (`headers`), the compile cache
//! (`cache`), installing the compiler wheels (`install`).
//!
//! Architecture invariant: no LSP types and no editor named here; every
//! process starts through `kernelpro_runner`.
#![forbid(unsafe_code)]

pub mod cache;
pub mod compile;
pub mod compile_db;
pub mod headers;
pub mod install;
pub mod nvcc_diag;
pub mod nvcc_flags;
pub mod toolchain;
