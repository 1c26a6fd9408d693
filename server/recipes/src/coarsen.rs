//! Thread coarsening under a fixed launch: only the first `CAP` blocks work,
//! each thread walking a grid-stride loop over every index the original
//! launch gave a thread, so any grid the spec or host code picks stays covered.

/// Block caps offered as separate rewrites, best first on an H200 (histogram, reduction): multiples of its 132 SMs (2, 8 and 32 blocks per SM).
pub(crate) const CAPS: [u32; 3] = [264, 1056, 4224];

/// `kp_blocks` (the working blocks) and the early return of the others, before any barrier.
pub(crate) fn capped_blocks(ind: &str, cap: u32) -> String {
    format!(
        "{ind}const unsigned kp_blocks = gridDim.x < {cap}u ? gridDim.x : {cap}u;\n{ind}if (blockIdx.x >= kp_blocks) return;\n"
    )
}

/// The head of a loop binding `ty index` to every original global index this thread now covers
/// (`blockIdx.x * blockDim.x + threadIdx.x` for every block of the original grid), without a brace.
pub(crate) fn grid_stride_head(ind: &str, ty: &str, index: &str) -> String {
    format!(
        "{ind}for (long long kp_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kp_i < (long long)gridDim.x * blockDim.x; kp_i += (long long)kp_blocks * blockDim.x) {{\n{ind}  const {ty} {index} = ({ty})kp_i;\n"
    )
}
