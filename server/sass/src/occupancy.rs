//! Theoretical occupancy, computed the way `cuda_occupancy.h` (the CUDA
//! Occupancy Calculator) does for compute capability 8.x and 9.0:
//!
//! - registers are allocated per warp in units of 256 and per SM sub-partition
//!   (4 per SM), so warps/SM by registers = 4 · ⌊(65536 / 4) / ⌈regs·32⌉₂₅₆⌋;
//! - shared memory per block = requested + 1 KB reserved by the driver, rounded
//!   up to 128 B, against the largest carveout the SM supports;
//! - the block's warps are also bounded by max warps/SM and max blocks/SM.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchLimits {
    pub arch: &'static str,
    pub regs_per_sm: u32,
    /// Registers are granted to a warp in multiples of this.
    pub reg_alloc_unit: u32,
    pub max_regs_per_thread: u32,
    pub sub_partitions: u32,
    pub max_warps_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub max_threads_per_block: u32,
    pub shared_per_sm: u32,
    /// Largest opt-in shared memory of one block (`cudaFuncAttributeMaxDynamicSharedMemorySize`).
    pub max_shared_per_block: u32,
    pub reserved_shared_per_block: u32,
    pub shared_alloc_unit: u32,
}

const KB: u32 = 1024;

impl ArchLimits {
    /// Limits for `sm_80`, `sm_86`, `sm_89` and `sm_90` (also `sm_90a`), from the
    /// CUDA C++ Programming Guide's compute-capability table and `cuda_occupancy.h`.
    pub fn for_arch(arch: &str) -> Option<ArchLimits> {
        let base = ArchLimits {
            arch: "sm_80",
            regs_per_sm: 64 * KB,
            reg_alloc_unit: 256,
            max_regs_per_thread: 255,
            sub_partitions: 4,
            max_warps_per_sm: 64,
            max_blocks_per_sm: 32,
            max_threads_per_block: 1024,
            shared_per_sm: 164 * KB,
            max_shared_per_block: 163 * KB,
            reserved_shared_per_block: KB,
            shared_alloc_unit: 128,
        };
        let small_sm = ArchLimits { max_warps_per_sm: 48, shared_per_sm: 100 * KB, max_shared_per_block: 99 * KB, ..base };
        match arch.trim_end_matches('a') {
            "sm_80" => Some(base),
            "sm_86" => Some(ArchLimits { arch: "sm_86", max_blocks_per_sm: 16, ..small_sm }),
            "sm_89" => Some(ArchLimits { arch: "sm_89", max_blocks_per_sm: 24, ..small_sm }),
            "sm_90" => Some(ArchLimits { arch: "sm_90", shared_per_sm: 228 * KB, max_shared_per_block: 227 * KB, ..base }),
            _ => None,
        }
    }
}

/// The resource that caps blocks per SM. When several give the same cap the
/// hardware limits (warps, blocks) are named first: raising a resource would not help.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Limiter {
    Warps,
    Blocks,
    Registers,
    SharedMemory,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Occupancy {
    pub blocks_per_sm: u32,
    pub active_warps: u32,
    pub max_warps: u32,
    /// `active_warps / max_warps` in percent.
    pub percent: f64,
    pub limiter: Limiter,
}

/// Occupancy of a launch with `block_threads` threads per block, `regs_per_thread`
/// registers (ptxas "Used N registers") and `smem_per_block_bytes` of static plus
/// dynamic shared memory. A block that cannot launch at all gives 0 blocks, with
/// the resource that does not fit as the limiter.
pub fn occupancy(limits: &ArchLimits, block_threads: u32, regs_per_thread: u32, smem_per_block_bytes: u32) -> Occupancy {
    let warps_per_block = block_threads.div_ceil(32);
    let by_warps = if block_threads == 0 || block_threads > limits.max_threads_per_block {
        0
    } else {
        limits.max_warps_per_sm / warps_per_block
    };
    let candidates = [
        (Limiter::Warps, by_warps),
        (Limiter::Blocks, limits.max_blocks_per_sm),
        (Limiter::Registers, blocks_by_registers(limits, warps_per_block, regs_per_thread)),
        (Limiter::SharedMemory, blocks_by_shared(limits, smem_per_block_bytes)),
    ];
    let (limiter, blocks_per_sm) =
        candidates.into_iter().fold(candidates[0], |best, c| if c.1 < best.1 { c } else { best });
    let active_warps = blocks_per_sm * warps_per_block;
    Occupancy {
        blocks_per_sm,
        active_warps,
        max_warps: limits.max_warps_per_sm,
        percent: 100.0 * active_warps as f64 / limits.max_warps_per_sm as f64,
        limiter,
    }
}

fn blocks_by_registers(limits: &ArchLimits, warps_per_block: u32, regs_per_thread: u32) -> u32 {
    let regs_per_warp = (regs_per_thread * 32).next_multiple_of(limits.reg_alloc_unit);
    if regs_per_warp == 0 || warps_per_block == 0 {
        return u32::MAX;
    }
    // The hardware checks a block as if its warps were spread over all sub-partitions.
    let assumed_per_block = regs_per_warp * warps_per_block.next_multiple_of(limits.sub_partitions);
    if regs_per_thread > limits.max_regs_per_thread || assumed_per_block > limits.regs_per_sm {
        return 0;
    }
    let warps_per_partition = limits.regs_per_sm / limits.sub_partitions / regs_per_warp;
    warps_per_partition * limits.sub_partitions / warps_per_block
}

fn blocks_by_shared(limits: &ArchLimits, smem_per_block_bytes: u32) -> u32 {
    let allocated = (smem_per_block_bytes + limits.reserved_shared_per_block).next_multiple_of(limits.shared_alloc_unit);
    if allocated > limits.max_shared_per_block + limits.reserved_shared_per_block {
        return 0;
    }
    limits.shared_per_sm / allocated
}
