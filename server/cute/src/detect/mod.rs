//! Finding a dense matrix product in a kernel: the spec's `op = gemm` hint
//! first, else the loop structure of a naive matmul.

mod hint;
mod naive;

use crate::kernel::KernelInfo;
use crate::shape::GemmShape;

/// The matrix product kernel `kernel` of `file_text` computes, if it is one.
pub fn detect_gemm(file_text: &str, kernel: &str) -> Option<GemmShape> {
    let k = KernelInfo::find(file_text, kernel)?;
    hint::detect(&k).or_else(|| naive::detect(file_text, &k))
}
