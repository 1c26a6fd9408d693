//! The CuteGemm recipe: a kernel that computes a dense matrix product
//! (declared by a `// kernelpro: op = gemm M N K layout` hint or recognised
//! from a naive loop) is rewritten as a CuTe GEMM that keeps the kernel's
//! name, parameters and launch, and (16-bit inputs) as one that also changes
//! the spec's launch for Hopper's TMA and two consumer warpgroups.
//!
//! [`detect_gemm`] finds the product, [`cute_gemm_kernel`] writes the CuTe
//! code, [`CuteGemmRecipe`] puts both behind the recipes' `Recipe` trait, and
//! [`cute_flags`] / [`cutlass_include`] say how nvcc must compile the result.
#![forbid(unsafe_code)]

mod detect;
mod generate;
mod kernel;
mod recipe;
mod shape;
mod toolchain;
mod warp_specialized;
mod wgmma;

pub use detect::detect_gemm;
pub use generate::{CuteKernel, Math, NewLaunch, Unsupported, cute_gemm_kernel, launch_changing_gemm};
pub use recipe::CuteGemmRecipe;
pub use shape::{Dim, Elem, GemmShape, Major, Scale};
pub use toolchain::{cute_arch, cute_flags, cutlass_include};

#[cfg(test)]
mod tests;
