//! Theoretical occupancy, computed the way `cuda_occupancy.h` (the CUDA
//! Occupancy Calculator) does, for every architecture nvcc 13 compiles for
//! (`nvcc --list-gpu-code`: sm_75 to sm_121):
//!
//! - registers are allocated per warp in units of 256 and per SM sub-partition
//!   (4 per SM), so warps/SM by registers = 4 · ⌊(65536 / 4) / ⌈regs·32⌉₂₅₆⌋;
//! - shared memory per block = requested + 1 KB reserved by the driver (8.0
//!   and later; none on 7.5), rounded up to 128 B (256 B on 7.5), against the
//!   largest carveout the SM supports;
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
    /// Limits for every `sm_XY` nvcc 13.2 targets, with or without the `a`/`f`
    /// suffix (`sm_90a`, `sm_100f`): blocks per SM, shared-memory carveouts and
    /// allocation units from CUDA 13.2's `cuda_occupancy.h`; warps per SM,
    /// shared memory per SM and per block from the CUDA C++ Programming Guide's
    /// compute-capability table. `None` for anything else (no guessing).
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
        // 1536 threads and 100 KB of shared memory per SM: GA10x, Ada, consumer Blackwell.
        let small_sm =
            ArchLimits { max_warps_per_sm: 48, shared_per_sm: 100 * KB, max_shared_per_block: 99 * KB, ..base };
        let big_smem = ArchLimits { shared_per_sm: 228 * KB, max_shared_per_block: 227 * KB, ..base };
        let name = arch.strip_suffix(['a', 'f']).unwrap_or(arch);
        let limits = match name {
            "sm_75" => ArchLimits {
                max_warps_per_sm: 32,
                max_blocks_per_sm: 16,
                shared_per_sm: 64 * KB,
                max_shared_per_block: 64 * KB,
                reserved_shared_per_block: 0,
                shared_alloc_unit: 256,
                ..base
            },
            "sm_80" => base,
            "sm_86" | "sm_88" => ArchLimits { max_blocks_per_sm: 16, ..small_sm },
            // Orin: 1536 threads per SM with the A100's 164 KB carveout.
            "sm_87" => ArchLimits { max_warps_per_sm: 48, max_blocks_per_sm: 16, ..base },
            "sm_89" => ArchLimits { max_blocks_per_sm: 24, ..small_sm },
            "sm_90" | "sm_100" | "sm_103" => big_smem,
            // Thor (sm_101 before CUDA 13): 1536 threads and 24 blocks per SM, 228 KB.
            "sm_110" => ArchLimits { max_warps_per_sm: 48, max_blocks_per_sm: 24, ..big_smem },
            "sm_120" | "sm_121" => ArchLimits { max_blocks_per_sm: 24, ..small_sm },
            _ => return None,
        };
        let arch = KNOWN.iter().find(|k| **k == name).copied()?;
        Some(ArchLimits { arch, ..limits })
    }
}

/// The architectures [`ArchLimits::for_arch`] knows, as nvcc 13.2 lists them.
pub const KNOWN: [&str; 12] =
    ["sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100", "sm_103", "sm_110", "sm_120", "sm_121"];

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
pub fn occupancy(
    limits: &ArchLimits,
    block_threads: u32,
    regs_per_thread: u32,
    smem_per_block_bytes: u32,
) -> Occupancy {
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
    let allocated =
        (smem_per_block_bytes + limits.reserved_shared_per_block).next_multiple_of(limits.shared_alloc_unit);
    if allocated > limits.max_shared_per_block + limits.reserved_shared_per_block {
        return 0;
    }
    // No shared memory at all (7.5 reserves none): shared memory does not limit.
    limits.shared_per_sm.checked_div(allocated).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `expected` = (blocks per SM, active warps, limiter); percent = warps / max warps.
    fn check(arch: &str, threads: u32, regs: u32, smem: u32, expected: (u32, u32, Limiter)) {
        let limits = ArchLimits::for_arch(arch).unwrap();
        let o = occupancy(&limits, threads, regs, smem);
        assert_eq!((o.blocks_per_sm, o.active_warps, o.limiter), expected, "{arch} {threads}t {regs}r {smem}B");
        assert_eq!(o.percent, 100.0 * expected.1 as f64 / limits.max_warps_per_sm as f64);
    }

    use Limiter::*;

    // Notation: W = warps/block; regs/warp = ⌈regs·32⌉₂₅₆; by regs = 4·⌊16384 / regs/warp⌋ / W;
    // smem/block = ⌈smem + 1024⌉₁₂₈; by smem = ⌊smem per SM / smem/block⌋.

    #[test]
    fn sm_80() {
        // W 8: by warps 64/8 = 8; regs/warp 1024 → 4·16 = 64 warps → 8 blocks; tie → Warps. 64 warps = 100 %.
        check("sm_80", 256, 32, 0, (8, 64, Warps));
        // regs/warp 2048 → 4·8 = 32 warps → 4 blocks = 32 warps (50 %).
        check("sm_80", 256, 64, 0, (4, 32, Registers));
        // W 4: regs/warp 1280 → ⌊16384/1280⌋ = 12 → 48 warps → 12 blocks (< 64/4 = 16): 48 warps (75 %).
        check("sm_80", 128, 40, 0, (12, 48, Registers));
        // W 1: by warps 64, max blocks 32 → 32 blocks × 1 warp (50 %).
        check("sm_80", 32, 16, 0, (32, 32, Blocks));
        // smem/block 49152 + 1024 = 50176 → ⌊167936/50176⌋ = 3 blocks × 8 warps (37.5 %).
        check("sm_80", 256, 32, 48 * 1024, (3, 24, SharedMemory));
        // W 3: regs/warp 4096 → 4·4 = 16 warps → ⌊16/3⌋ = 5 blocks = 15 warps (23.4 %).
        check("sm_80", 96, 128, 0, (5, 15, Registers));
        // W 32: regs/warp 2048, the block needs 32·2048 = 65536 (fits) → 32 warps → 1 block (50 %).
        check("sm_80", 1024, 64, 0, (1, 32, Registers));
        // 255 regs → 8192 per warp · 32 warps = 262144 > 65536: cannot launch.
        check("sm_80", 1024, 255, 0, (0, 0, Registers));
        // 164 KB + 1 KB reserved > 163 KB + 1 KB per-block maximum: cannot launch.
        check("sm_80", 256, 32, 164 * 1024, (0, 0, SharedMemory));
        // More than 1024 threads per block cannot launch.
        check("sm_80", 2048, 16, 0, (0, 0, Warps));
    }

    #[test]
    fn sm_86() {
        // W 8: by warps 48/8 = 6, by regs 64/8 = 8 → 6 blocks = 48 warps (100 %).
        check("sm_86", 256, 32, 0, (6, 48, Warps));
        // W 1: max 16 blocks → 16 warps (33.3 %).
        check("sm_86", 32, 16, 0, (16, 16, Blocks));
        // W 4: regs/warp 1536 → ⌊16384/1536⌋ = 10 → 40 warps → 10 blocks (< 48/4 = 12): 40 warps (83.3 %).
        check("sm_86", 128, 48, 0, (10, 40, Registers));
        // smem/block 32768 + 1024 = 33792 → ⌊102400/33792⌋ = 3 blocks × 8 warps (50 %).
        check("sm_86", 256, 32, 32 * 1024, (3, 24, SharedMemory));
        // W 16: regs/warp 2048 → 32 warps → 2 blocks (< 48/16 = 3): 32 warps (66.7 %).
        check("sm_86", 512, 64, 0, (2, 32, Registers));
        // 99 KB + 1 KB = 102400 fits exactly once: 1 block × 8 warps (16.7 %).
        check("sm_86", 256, 32, 99 * 1024, (1, 8, SharedMemory));
        // 13576 + 1024 = 14600 → rounded to 14720; ⌊102400/14720⌋ = 6 (unrounded would give 7). W 2 → 12 warps (25 %).
        check("sm_86", 64, 16, 13576, (6, 12, SharedMemory));
    }

    #[test]
    fn sm_89() {
        // W 1: max 24 blocks → 24 warps (50 %).
        check("sm_89", 32, 16, 0, (24, 24, Blocks));
        // W 2: by warps 48/2 = 24 = max blocks 24; tie → Warps. 48 warps (100 %).
        check("sm_89", 64, 32, 0, (24, 48, Warps));
        // W 8: regs/warp 2304 → ⌊16384/2304⌋ = 7 → 28 warps → 3 blocks = 24 warps (50 %).
        check("sm_89", 256, 72, 0, (3, 24, Registers));
        // smem/block 20480 + 1024 = 21504 → ⌊102400/21504⌋ = 4 blocks × 4 warps (33.3 %).
        check("sm_89", 128, 32, 20 * 1024, (4, 16, SharedMemory));
        // W 32: by warps 48/32 = 1, by regs 64/32 = 2 → 1 block = 32 warps (66.7 %).
        check("sm_89", 1024, 32, 0, (1, 32, Warps));
        // W 24: regs/warp 2560 → ⌊16384/2560⌋ = 6 → 24 warps → 1 block (< 48/24 = 2): 24 warps (50 %).
        check("sm_89", 768, 80, 0, (1, 24, Registers));
        // 100 KB + 1 KB > 99 KB + 1 KB per-block maximum.
        check("sm_89", 128, 32, 100 * 1024, (0, 0, SharedMemory));
    }

    #[test]
    fn sm_90() {
        // W 4: regs/warp 168·32 = 5376 → ⌊16384/5376⌋ = 3 → 12 warps → 3 blocks (18.75 %).
        check("sm_90", 128, 168, 0, (3, 12, Registers));
        // smem/block 102400 + 1024 = 103424 → ⌊233472/103424⌋ = 2; by regs (2048/warp) 32/8 = 4 → 2 blocks × 8 warps (25 %).
        check("sm_90", 256, 64, 100 * 1024, (2, 16, SharedMemory));
        // W 8: 64/8 = 8 by warps and by regs; tie → Warps (100 %).
        check("sm_90", 256, 32, 0, (8, 64, Warps));
        // W 1: max 32 blocks (50 %).
        check("sm_90", 32, 16, 0, (32, 32, Blocks));
        // 227 KB + 1 KB = 233472 fits exactly once: 1 block × 4 warps (6.25 %).
        check("sm_90", 128, 32, 227 * 1024, (1, 4, SharedMemory));
        // 228 KB + 1 KB > 227 KB + 1 KB per-block maximum.
        check("sm_90", 128, 32, 228 * 1024, (0, 0, SharedMemory));
        // regs/warp 255·32 = 8160 → 8192; block 8·8192 = 65536 fits; 4·⌊16384/8192⌋ = 8 warps → 1 block (12.5 %).
        check("sm_90", 256, 255, 0, (1, 8, Registers));
        // 256 registers per thread exceed the 255 ISA limit.
        check("sm_90", 256, 256, 0, (0, 0, Registers));
    }

    #[test]
    fn sm_75() {
        // W 8: by warps 32/8 = 4; regs/warp 1024 → 64 warps → 8 blocks; 4 blocks = 32 warps (100 %).
        check("sm_75", 256, 32, 0, (4, 32, Warps));
        // No reserved 1 KB; 256 B units: 20000 → 20224; ⌊65536/20224⌋ = 3 blocks × 4 warps (37.5 %).
        check("sm_75", 128, 32, 20000, (3, 12, SharedMemory));
        // W 1: max 16 blocks (50 %).
        check("sm_75", 32, 16, 0, (16, 16, Blocks));
    }

    #[test]
    fn blackwell_and_thor() {
        // sm_100 is sm_90's SM: 227 KB + 1 KB fits once.
        check("sm_100a", 128, 32, 227 * 1024, (1, 4, SharedMemory));
        check("sm_103", 256, 32, 0, (8, 64, Warps));
        // sm_110: 48 warps, 24 blocks: W 1 → 24 warps (50 %).
        check("sm_110", 32, 16, 0, (24, 24, Blocks));
        // sm_120: 48 warps; W 8 → 6 blocks (100 %); 64 KB + 1 KB → ⌊102400/66560⌋ = 1 block.
        check("sm_120", 256, 32, 0, (6, 48, Warps));
        check("sm_121", 256, 32, 64 * 1024, (1, 8, SharedMemory));
        // More than 99 KB per block does not launch on sm_120.
        check("sm_120f", 128, 32, 100 * 1024, (0, 0, SharedMemory));
    }

    #[test]
    fn known_architectures() {
        assert_eq!(ArchLimits::for_arch("sm_90a").map(|l| l.arch), Some("sm_90"));
        assert_eq!(ArchLimits::for_arch("sm_100f").map(|l| l.arch), Some("sm_100"));
        assert_eq!(ArchLimits::for_arch("sm_70"), None);
        assert_eq!(ArchLimits::for_arch("compute_90"), None);
        for arch in KNOWN {
            assert_eq!(ArchLimits::for_arch(arch).map(|l| l.arch), Some(arch));
        }
    }
}
