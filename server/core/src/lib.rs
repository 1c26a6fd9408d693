//! The thin analysis layer of KernelPro (like rust-analyzer's `ide`): one
//! file's analysis (`analysis`), its launches (`launch`), and the hover and
//! lens text built from it (`hover`, `lens`). Settings live in
//! `kernelpro-config`, the compiler in `kernelpro-toolchain`, profiling and
//! the GPU harness in `kernelpro-measure`.
//!
//! Architecture invariant: no LSP types and no editor named here. The LSP
//! crate and the CLI both call into this crate and convert its plain data at
//! their own seam.
#![forbid(unsafe_code)]

pub mod analysis;
pub mod hover;
pub mod launch;
pub mod lens;
