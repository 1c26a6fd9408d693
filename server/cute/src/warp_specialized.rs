//! The launch-changing Hopper GEMM for 16-bit inputs: 384 threads a block
//! (one TMA producer warpgroup, two WGMMA consumer warpgroups sharing a
//! 128×256 tile), 64-deep k-tiles in four stages of dynamic shared memory,
//! and TMA loads from tensor maps that the kernel writes itself
//! (`tensormap.replace`), so the host needs no CUDA driver calls beyond the
//! launch and the dynamic-shared-memory attribute.
//!
//! It is a second rewrite beside the launch-keeping one because the 48 KiB a
//! launch without dynamic shared memory gets caps any main loop at about
//! half of cuBLAS on an H200 (docs/benchmarks.md, "CuTe GEMM main-loop
//! probes"); with this launch it reaches 0.86 (677 TFLOP/s, bf16 4096³). The kernel still holds
//! the launch-keeping helper and calls it under any other launch (or
//! target), so host code that keeps the old launch stays correct.

use crate::generate::stride_mk;
use crate::shape::{Elem, GemmShape};

/// Threads a block: producer warpgroup, then two consumer warpgroups.
pub(crate) const THREADS: u32 = 384;
pub(crate) const TILE_M: i64 = 128;
pub(crate) const TILE_N: i64 = 256;
pub(crate) const TILE_K: i64 = 64;
const STAGES: u32 = 4;

/// Dynamic shared memory the launch must give: the stages, their two
/// barriers each, the two 128-byte tensor-map staging areas, and the slack
/// to align the stages to the 1024-byte swizzle period.
pub(crate) fn smem_bytes() -> u32 {
    let stage = ((TILE_M + TILE_N) * TILE_K * 2) as u32;
    STAGES * stage + 2 * 8 * STAGES + 2 * 128 + 1024 + 128
}

/// The device function the rewritten kernel calls under the new launch.
pub(crate) fn function_name(kernel_name: &str) -> String {
    format!("kp_cute_gemm_ws_{kernel_name}")
}

/// How one operand's tiles are stored and loaded.
fn operand(k_major: bool, ty: &str, mn: char, tile: char, ptr: &str) -> [String; 3] {
    if k_major {
        // Rows of 64 K elements (128 bytes): 64-row TMA boxes, stacked along MN.
        [
            format!(
                "tile_to_shape(GMMA::Layout_K_SW128_Atom<{ty}>{{}}, make_shape(Int<b{mn}>{{}}, Int<bK>{{}}, Int<bP>{{}}))"
            ),
            format!("{ptr}, K, {mn}, uint64_t(K) * sizeof({ty})"),
            format!("k * bK, t{} * b{mn} + h * 64", tile),
        ]
    } else {
        // 64-wide MN columns, all K rows of one before the next: one box each.
        [
            format!(
                "tile_to_shape(GMMA::Layout_MN_SW128_Atom<{ty}>{{}}, make_shape(Int<b{mn}>{{}}, Int<bK>{{}}, Int<bP>{{}}), Step<_2, _1, _3>{{}})"
            ),
            format!("{ptr}, {mn}, K, uint64_t({mn}) * sizeof({ty})"),
            format!("t{} * b{mn} + h * 64, k * bK", tile),
        ]
    }
}

/// The helper for `shape`, placed after the launch-keeping helper `fallback`
/// (called with the same arguments under any other launch).
pub(crate) fn helper(shape: &GemmShape, kernel_name: &str, fallback: &str) -> String {
    let ty = shape.a_type.cute();
    let (a_k_major, b_k_major) = shape.k_major();
    let [smem_a, map_a, at_a] = operand(a_k_major, ty, 'M', 'm', "a_ptr");
    let [smem_b, map_b, at_b] = operand(b_k_major, ty, 'N', 'n', "b_ptr");
    let major = |k: bool| if k { "GMMA::Major::K" } else { "GMMA::Major::MN" };
    let (op, elemtype) = match shape.a_type {
        Elem::Bf16 => ("SM90_64x256x16_F32BF16BF16_SS", 10),
        _ => ("SM90_64x256x16_F32F16F16_SS", 6),
    };
    let (scale_params, scale_args, epilogue) = match &shape.alpha_beta {
        Some(_) => (", float alpha, float beta", ", alpha, beta", SCALED_EPILOGUE),
        None => ("", "", EPILOGUE),
    };
    [
        ("@WS_FUNCTION@", function_name(kernel_name)),
        ("@FALLBACK@", fallback.to_string()),
        ("@SCALE_PARAMS@", scale_params.into()),
        ("@SCALE_ARGS@", scale_args.into()),
        ("@TA@", ty.into()),
        ("@TC@", shape.c_type.cute().into()),
        ("@C_STRIDE@", stride_mk(shape.c_layout, 'M', 'N')),
        ("@SMEM_A@", smem_a),
        ("@SMEM_B@", smem_b),
        ("@MAP_A@", map_a),
        ("@MAP_B@", map_b),
        ("@AT_A@", at_a),
        ("@AT_B@", at_b),
        (
            "@MMA@",
            format!(
                "make_tiled_mma({op}<{}, {}>{{}}, Layout<Shape<_2, _1, _1>>{{}})",
                major(a_k_major),
                major(b_k_major)
            ),
        ),
        ("@ELEMTYPE@", elemtype.to_string()),
        ("@EPILOGUE@", epilogue.into()),
        ("@SMEM_BYTES@", smem_bytes().to_string()),
        ("@THREADS@", THREADS.to_string()),
        ("@TILE_M@", TILE_M.to_string()),
        ("@TILE_N@", TILE_N.to_string()),
        ("@TILE_K@", TILE_K.to_string()),
        ("@STAGES@", STAGES.to_string()),
    ]
    .iter()
    .fold(format!("{TMAP}{HELPER}"), |t, (key, value)| t.replace(key, value))
}

/// Tensor maps in global memory (TMA reads them there), written by the CTA
/// that uses them. Shared by every rewritten kernel of a file.
const TMAP: &str = r#"#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>

#ifndef KERNELPRO_DEVICE_TENSOR_MAPS
#define KERNELPRO_DEVICE_TENSOR_MAPS
// A CTA holds one of its multiprocessor's four slots while it runs, so
// concurrent launches never share a slot.
__device__ alignas(128) unsigned char kp_tensor_maps[256 * 4][2][128];
__device__ unsigned int kp_tensor_map_taken[256 * 4];

static __device__ __forceinline__ int kp_take_tensor_map_slot() {
  unsigned int sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  for (int j = 0;; j = (j + 1) % 4) {
    const int slot = int(sm % 256) * 4 + j;
    if (atomicCAS(&kp_tensor_map_taken[slot], 0u, 1u) == 0u) return slot;
  }
}

// One warp writes a 2D, 128-byte-swizzled tensor map of 16-bit elements
// (PTX element type `Elemtype`; dimension 0 contiguous) with 64x64 boxes
// into `gmem` through the 128-byte staging area `smem`, and publishes it to the TMA unit.
template <int Elemtype>
static __device__ __forceinline__ void kp_write_tensor_map(unsigned char* smem, unsigned char* gmem,
    const void* base, uint32_t inner, uint32_t outer, uint64_t stride_bytes) {
  const int lane = threadIdx.x % 32;
  reinterpret_cast<uint32_t*>(smem)[lane] = 0;
  __syncwarp();
  const uint32_t s = cute::cast_smem_ptr_to_uint(smem);
  if (lane == 0) {
    asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;" ::"r"(s), "l"(base) : "memory");
    asm volatile("tensormap.replace.tile.rank.shared::cta.b1024.b32 [%0], 1;" ::"r"(s) : "memory");
    asm volatile("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 0, 64;" ::"r"(s) : "memory");
    asm volatile("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 1, 64;" ::"r"(s) : "memory");
    asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 0, %1;" ::"r"(s), "r"(inner) : "memory");
    asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 1, %1;" ::"r"(s), "r"(outer) : "memory");
    asm volatile("tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], 0, %1;" ::"r"(s), "l"(stride_bytes) : "memory");
    asm volatile("tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 0, 1;" ::"r"(s) : "memory");
    asm volatile("tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 1, 1;" ::"r"(s) : "memory");
    asm volatile("tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%0], %1;" ::"r"(s), "n"(Elemtype) : "memory");
    asm volatile("tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%0], 0;" ::"r"(s) : "memory");
    asm volatile("tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%0], 3;" ::"r"(s) : "memory");
    asm volatile("tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%0], 0;" ::"r"(s) : "memory");
  }
  __syncwarp();
  asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;"
               ::"l"(gmem), "r"(s) : "memory");
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(gmem) : "memory");
}
#endif

"#;

/// C = A·B: converted in registers, then stored in pairs (C is 16-byte aligned
/// and its tile's rows or columns are contiguous pairs).
const EPILOGUE: &str = r#"        Tensor tCrD = make_fragment_like<TC>(tCrC);
        CUTE_UNROLL
        for (int i = 0; i < size(tCrC); ++i) tCrD(i) = TC(tCrC(i));
        copy(AutoVectorizingCopyWithAssumedAlignment<32>{}, tCrD, tCgC);
"#;

/// C = alpha·A·B + beta·C, element by element.
const SCALED_EPILOGUE: &str = r#"        CUTE_UNROLL
        for (int i = 0; i < size(tCrC); ++i) tCgC(i) = TC(alpha * tCrC(i) + beta * float(tCgC(i)));
"#;

const HELPER: &str = r#"// Under its own launch (@THREADS@ threads, @SMEM_BYTES@ bytes of dynamic shared memory, one
// CTA a @TILE_M@x@TILE_N@ tile or a persistent grid of fewer), on sm_90a: warpgroup 0 loads
// @TILE_K@-deep k-tiles by TMA into @STAGES@ stages, warpgroups 1 and 2 multiply them with WGMMA.
// Under any other launch, or where the sizes do not fit the tile, @FALLBACK@ runs.
static __device__ __forceinline__ void @WS_FUNCTION@(const void* a_ptr, const void* b_ptr, void* c_ptr, int M, int N, int K@SCALE_PARAMS@) {
#if defined(CUTE_ARCH_MMA_SM90A_ENABLED)
  using namespace cute;
  unsigned int dynamic_smem;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_smem));
  const bool aligned = ((reinterpret_cast<uintptr_t>(a_ptr) | reinterpret_cast<uintptr_t>(b_ptr) | reinterpret_cast<uintptr_t>(c_ptr)) % 16) == 0;
  if (blockDim.x * blockDim.y * blockDim.z == @THREADS@ && dynamic_smem >= @SMEM_BYTES@ && aligned &&
      M % @TILE_M@ == 0 && N % @TILE_N@ == 0 && K % @TILE_K@ == 0 && K > 0) {
    using TA = @TA@;
    using TC = @TC@;
    Tensor mC = make_tensor(make_gmem_ptr(static_cast<TC*>(c_ptr)), make_shape(M, N), @C_STRIDE@);
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const int ctas = gridDim.x * gridDim.y * gridDim.z;
    constexpr int bM = @TILE_M@, bN = @TILE_N@, bK = @TILE_K@, bP = @STAGES@;
    auto sA_layout = @SMEM_A@;
    auto sB_layout = @SMEM_B@;
    // Stages aligned to the swizzle period, then the barriers and the staging areas.
    extern __shared__ unsigned char kp_dynamic_smem[];
    unsigned char* base = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(kp_dynamic_smem) + 1023) & ~uintptr_t(1023));
    TA* smem_a = reinterpret_cast<TA*>(base);
    TA* smem_b = smem_a + cosize_v<decltype(sA_layout)>;
    uint64_t* full = reinterpret_cast<uint64_t*>(smem_b + cosize_v<decltype(sB_layout)>);
    uint64_t* empty = full + bP;
    auto staging = reinterpret_cast<unsigned char (*)[128]>((reinterpret_cast<uintptr_t>(empty + bP) + 127) & ~uintptr_t(127));
    constexpr int a_stage = bM * bK, b_stage = bN * bK, box = 64 * bK;  // elements
    constexpr uint32_t stage_bytes = (a_stage + b_stage) * sizeof(TA);
    Tensor sA = make_tensor(make_smem_ptr(smem_a), sA_layout);  // (BLK_M,BLK_K,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(smem_b), sB_layout);  // (BLK_N,BLK_K,PIPE)

    const int tiles_m = M / bM, tiles_n = N / bN, k_tiles = K / bK;
    const int tiles = tiles_m * tiles_n;
    if (cta >= tiles) return;
    const int my_tiles = (tiles - cta + ctas - 1) / ctas;
    // Tile t walks 8 tile rows at a time down the columns, so that CTAs
    // running together share their B tiles (and A tiles) in L2.
    auto tile_of = [&](int t) {
      const int g = t / (8 * tiles_n), r = t % (8 * tiles_n);
      const int rows = min(8, tiles_m - g * 8);
      return make_tuple(g * 8 + r % rows, r / rows);
    };

    if (tid == 0) {
      for (int s = 0; s < bP; ++s) {
        cutlass::arch::ClusterBarrier::init(&full[s], 1);
        cutlass::arch::ClusterBarrier::init(&empty[s], 2);  // one arrival a consumer warpgroup
      }
      cutlass::arch::fence_barrier_init();
    }
    __syncthreads();

    const int warpgroup = __shfl_sync(0xffffffff, tid / 128, 0);
    int slot = -1;  // this CTA's tensor-map slot, held by thread 0
    if (warpgroup == 0) {
      cutlass::arch::warpgroup_reg_dealloc<40>();
      if (tid < 32) {
        slot = __shfl_sync(0xffffffff, tid == 0 ? kp_take_tensor_map_slot() : 0, 0);
        unsigned char* map_a = kp_tensor_maps[slot][0];
        unsigned char* map_b = kp_tensor_maps[slot][1];
        kp_write_tensor_map<@ELEMTYPE@>(staging[0], map_a, @MAP_A@);
        kp_write_tensor_map<@ELEMTYPE@>(staging[1], map_b, @MAP_B@);
        if (tid == 0) {
          const uint64_t hint = uint64_t(TMA::CacheHintSm90::EVICT_NORMAL);
          int it = 0;
          for (int t = 0; t < my_tiles; ++t) {
            auto [tm, tn] = tile_of(cta + t * ctas);
            for (int k = 0; k < k_tiles; ++k, ++it) {
              const int s = it % bP;
              if (it >= bP) cutlass::arch::ClusterBarrier::wait(&empty[s], ((it / bP) & 1) ^ 1);
              cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&full[s], stage_bytes);
              CUTE_UNROLL
              for (int h = 0; h < bM / 64; ++h)
                SM90_TMA_LOAD_2D::copy(map_a, &full[s], hint, smem_a + s * a_stage + h * box, @AT_A@);
              CUTE_UNROLL
              for (int h = 0; h < bN / 64; ++h)
                SM90_TMA_LOAD_2D::copy(map_b, &full[s], hint, smem_b + s * b_stage + h * box, @AT_B@);
            }
          }
        }
      }
    } else {
      cutlass::arch::warpgroup_reg_alloc<232>();
      TiledMMA mma = @MMA@;
      ThrMMA thr_mma = mma.get_slice(tid - 128);
      // Shared-memory descriptors, not registers: WGMMA reads the stages in place.
      Tensor tCrA = thr_mma.make_fragment_A(thr_mma.partition_A(sA));  // (MMA,MMA_M,MMA_K,PIPE)
      Tensor tCrB = thr_mma.make_fragment_B(thr_mma.partition_B(sB));  // (MMA,MMA_N,MMA_K,PIPE)
      const bool signals = tid % 128 == 0;
      int it = 0;
      for (int t = 0; t < my_tiles; ++t) {
        auto [tm, tn] = tile_of(cta + t * ctas);
        Tensor gC = local_tile(mC, make_shape(Int<bM>{}, Int<bN>{}), make_coord(tm, tn));
        Tensor tCgC = thr_mma.partition_C(gC);
        Tensor tCrC = thr_mma.make_fragment_C(tCgC);
        // The first k-block overwrites the accumulators: clearing them inside
        // the WGMMA pipeline would serialize it (ptxas C7514).
        mma.accumulate_ = GMMA::ScaleOut::Zero;
        int k = 0;
        CUTE_NO_UNROLL
        do {
          const int s = it % bP;
          cutlass::arch::ClusterBarrier::wait(&full[s], (it / bP) & 1);
          warpgroup_fence_operand(tCrC);
          warpgroup_arrive();
          CUTE_UNROLL
          for (int kb = 0; kb < size<2>(tCrA); ++kb) {
            gemm(mma, tCrA(_, _, kb, s), tCrB(_, _, kb, s), tCrC);
            mma.accumulate_ = GMMA::ScaleOut::One;
          }
          warpgroup_commit_batch();
          // One batch stays in flight; the one before it is done, so its stage is free.
          warpgroup_wait<1>();
          warpgroup_fence_operand(tCrC);
          if (k > 0 && signals) cutlass::arch::ClusterBarrier::arrive(&empty[(it - 1) % bP]);
          ++it;
        } while (++k < k_tiles);
        warpgroup_wait<0>();
        warpgroup_fence_operand(tCrC);
        if (signals) cutlass::arch::ClusterBarrier::arrive(&empty[(it - 1) % bP]);
@EPILOGUE@      }
    }
    // The slot is free again once every load that read its maps is done.
    __syncthreads();
    if (tid == 0 && slot >= 0) atomicExch(&kp_tensor_map_taken[slot], 0u);
    return;
  }
#endif
  @FALLBACK@(a_ptr, b_ptr, c_ptr, M, N, K@SCALE_ARGS@);
}

"#;
