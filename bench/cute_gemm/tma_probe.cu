// Probe: warp-specialized WGMMA GEMM (bf16, A and B row-major) fed by TMA with
// tensor maps built on the device (no host code), optionally multicast across
// a cluster of 4 CTAs (2x2 output tiles share their A and B tiles).
// Built like a generated file: bench/cute_gemm/harness.cu -include this file.
// Variants: KP_BK (16/32/64), KP_STAGES, KP_CLUSTER (1 or 4), KP_WAIT (wgmma
// batches kept in flight: 0 or 1), KP_DYN_SMEM (stages in dynamic shared
// memory of that many bytes: what a launch with more shared memory would
// give). bench/cute_gemm/probe_sweep.sh runs the measured ones.
#include <cuda_bf16.h>
#include <cute/tensor.hpp>
#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cstdint>

#ifndef KP_BK
#define KP_BK 32
#endif
#ifndef KP_STAGES
#define KP_STAGES 2
#endif
#ifndef KP_CLUSTER
#define KP_CLUSTER 4
#endif
#ifndef KP_WAIT
#define KP_WAIT 0
#endif
// Tensor maps live in global memory for TMA to read. A CTA takes one of
// four slots of its multiprocessor for as long as it runs (at most two CTAs
// of the kernel fit on one), so concurrent launches never share a slot.
#define KP_SLOTS (256 * 4)
__device__ alignas(128) unsigned char kp_tmaps[KP_SLOTS][2][128];
__device__ unsigned int kp_tmap_taken[KP_SLOTS];

static __device__ __forceinline__ int kp_take_tmap_slot() {
  unsigned int sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  for (int j = 0;; j = (j + 1) % 4) {
    const int slot = int(sm % 256) * 4 + j;
    if (atomicCAS(&kp_tmap_taken[slot], 0u, 1u) == 0u) return slot;
  }
}

// One warp writes a 2D bf16 tensor map (inner dimension contiguous) into
// `gmem` through the 128-byte staging area `smem`.
// `Swizzle`: 1, 2, 3 for the 32-, 64-, 128-byte patterns of the GMMA layout atoms.
template <int Swizzle>
static __device__ __forceinline__ void kp_make_tmap(unsigned char* smem, unsigned char* gmem, const void* base,
    uint32_t inner, uint32_t outer, uint64_t stride_bytes, uint32_t box_inner, uint32_t box_outer) {
  const int lane = threadIdx.x % 32;
  reinterpret_cast<uint32_t*>(smem)[lane] = 0;
  __syncwarp();
  const uint32_t s = cute::cast_smem_ptr_to_uint(smem);
  if (lane == 0) {
    asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;" ::"r"(s), "l"(base) : "memory");
    asm volatile("tensormap.replace.tile.rank.shared::cta.b1024.b32 [%0], 1;" ::"r"(s) : "memory");
    asm volatile("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 0, %1;" ::"r"(s), "r"(box_inner) : "memory");
    asm volatile("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 1, %1;" ::"r"(s), "r"(box_outer) : "memory");
    asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 0, %1;" ::"r"(s), "r"(inner) : "memory");
    asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 1, %1;" ::"r"(s), "r"(outer) : "memory");
    asm volatile("tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], 0, %1;" ::"r"(s), "l"(stride_bytes) : "memory");
    asm volatile("tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 0, 1;" ::"r"(s) : "memory");
    asm volatile("tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 1, 1;" ::"r"(s) : "memory");
    asm volatile("tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%0], 10;" ::"r"(s) : "memory");  // bf16
    asm volatile("tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%0], 0;" ::"r"(s) : "memory");
    asm volatile("tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%0], %1;" ::"r"(s), "n"(Swizzle) : "memory");
    asm volatile("tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%0], 0;" ::"r"(s) : "memory");
  }
  __syncwarp();
  asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;"
               ::"l"(gmem), "r"(s) : "memory");
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(gmem) : "memory");
}

static __device__ __forceinline__ void kp_tma_gemm(const void* a_ptr, const void* b_ptr, void* c_ptr, int M, int N, int K) {
  using namespace cute;
  using TA = cute::bfloat16_t;
  using TB = cute::bfloat16_t;
  using TC = cute::bfloat16_t;
  TC* C = static_cast<TC*>(c_ptr);
  Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, Int<1>{}));
  const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int ctas = gridDim.x * gridDim.y * gridDim.z;
  constexpr int bM = 128, bN = 128, bK = KP_BK, bP = KP_STAGES;
#if defined(CUTE_ARCH_MMA_SM90A_ENABLED)
#if KP_BK == 16
  using AtomA = GMMA::Layout_K_SW32_Atom<TA>;
  constexpr int swizzle_a = 1;
#elif KP_BK == 32
  using AtomA = GMMA::Layout_K_SW64_Atom<TA>;
  constexpr int swizzle_a = 2;
#else
  using AtomA = GMMA::Layout_K_SW128_Atom<TA>;
  constexpr int swizzle_a = 3;
#endif
  // A stage: 128 K-major rows (two 64-row TMA boxes). B stage: two 64-wide
  // MN-major boxes of bK rows each, K atoms first so that a box is contiguous.
  auto sA_layout = tile_to_shape(AtomA{}, make_shape(Int<bM>{}, Int<bK>{}, Int<bP>{}));
  auto sB_layout = tile_to_shape(GMMA::Layout_MN_SW128_Atom<TB>{}, make_shape(Int<bN>{}, Int<bK>{}, Int<bP>{}), Step<_2, _1, _3>{});
#ifdef KP_DYN_SMEM
  // What the 48 KiB static limit costs: the same kernel on dynamic shared
  // memory (the harness raises the limit and passes KP_DYN_SMEM bytes).
  extern __shared__ unsigned char kp_dyn[];
  unsigned char* base = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(kp_dyn) + 1023) & ~uintptr_t(1023));
  TA* smem_a = reinterpret_cast<TA*>(base);
  TB* smem_b = reinterpret_cast<TB*>(base + cosize_v<decltype(sA_layout)> * 2);
  uint64_t* full = reinterpret_cast<uint64_t*>(base + (cosize_v<decltype(sA_layout)> + cosize_v<decltype(sB_layout)>) * 2);
  uint64_t* empty = full + bP;
  auto tmap_stage = reinterpret_cast<unsigned char (*)[128]>(empty + bP + 16 - (2 * bP) % 16);
#else
  __shared__ alignas(1024) TA smem_a[cosize_v<decltype(sA_layout)>];
  __shared__ alignas(1024) TB smem_b[cosize_v<decltype(sB_layout)>];
  __shared__ uint64_t full[bP], empty[bP];
  __shared__ alignas(128) unsigned char tmap_stage[2][128];
#endif
  constexpr int a_stage = bM * bK, b_stage = bN * bK, half = 64 * bK;  // elements
  constexpr uint32_t stage_bytes = (a_stage + b_stage) * 2;
  Tensor sA = make_tensor(make_smem_ptr(smem_a), sA_layout);
  Tensor sB = make_tensor(make_smem_ptr(smem_b), sB_layout);

  const int tiles_m = M / bM, tiles_n = N / bN, k_tiles = K / bK;
  // A cluster of 4 computes 2x2 output tiles, rank r the tile (r % 2, r / 2)
  // of them, and its CTAs multicast their halves of the shared A and B tiles;
  // where the tile grid is odd, every CTA loads its own tiles.
  const int rank = KP_CLUSTER == 1 ? 0 : int(cute::block_rank_in_cluster());
  const bool shared_tiles = KP_CLUSTER == 4 && tiles_m % 2 == 0 && tiles_n % 2 == 0;
  const int rm = shared_tiles ? rank % 2 : 0, rn = shared_tiles ? rank / 2 : 0;
  const int span = shared_tiles ? 2 : 1;
  const int group_m = tiles_m / span, groups = group_m * (tiles_n / span);
  const int group0 = shared_tiles ? cta / 4 : cta, group_step = shared_tiles ? ctas / 4 : ctas;
  // The cluster leaves together, or not at all (its CTAs sync twice below).
  if (cta - rank >= (shared_tiles ? groups * 4 : groups)) return;
  const int my_groups = group0 < groups ? (groups - group0 + group_step - 1) / group_step : 0;
  auto tile_of = [&](int g) { return make_tuple((g % group_m) * span + rm, (g / group_m) * span + rn); };
  // The CTAs that read what this CTA's loads write: same rows of A (same rm), same columns of B (same rn).
  const uint16_t mask_a = uint16_t((1u << rm) | (1u << (rm + 2)));
  const uint16_t mask_b = uint16_t(3u << (2 * rn));

  if (tid == 0) {
    for (int s = 0; s < bP; ++s) {
      cutlass::arch::ClusterBarrier::init(&full[s], 1);
      cutlass::arch::ClusterBarrier::init(&empty[s], shared_tiles ? 3 : 1);
    }
    cutlass::arch::fence_barrier_init();
  }
  if constexpr (KP_CLUSTER == 1) __syncthreads(); else cute::cluster_sync();

  const int warpgroup = __shfl_sync(0xffffffff, tid / 128, 0);
  int slot = -1;  // this CTA's tensor-map slot, held by thread 0
  if (warpgroup == 0) {
    cutlass::arch::warpgroup_reg_dealloc<40>();
    if (tid < 32 && my_groups > 0) {
      slot = __shfl_sync(0xffffffff, tid == 0 ? kp_take_tmap_slot() : 0, 0);
      unsigned char* map_a = kp_tmaps[slot][0];
      unsigned char* map_b = kp_tmaps[slot][1];
      kp_make_tmap<swizzle_a>(tmap_stage[0], map_a, a_ptr, K, M, uint64_t(K) * 2, bK, 64);
      kp_make_tmap<3>(tmap_stage[1], map_b, b_ptr, N, K, uint64_t(N) * 2, 64, bK);
      if (tid == 0) {
        const uint64_t hint = uint64_t(TMA::CacheHintSm90::EVICT_NORMAL);
        int it = 0;
        for (int g = 0; g < my_groups; ++g) {
          auto [tm, tn] = tile_of(group0 + g * group_step);
          for (int k = 0; k < k_tiles; ++k, ++it) {
            const int s = it % bP;
            if (it >= bP) cutlass::arch::ClusterBarrier::wait(&empty[s], ((it / bP) & 1) ^ 1);
            cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&full[s], stage_bytes);
            if (!shared_tiles) {
              for (int h = 0; h < 2; ++h) {
                SM90_TMA_LOAD_2D::copy(map_a, &full[s], hint, smem_a + s * a_stage + h * half, k * bK, tm * bM + h * 64);
                SM90_TMA_LOAD_2D::copy(map_b, &full[s], hint, smem_b + s * b_stage + h * half, tn * bN + h * 64, k * bK);
              }
            } else {
              // This CTA's half of the shared A tile and of the shared B tile.
              SM90_TMA_LOAD_MULTICAST_2D::copy(map_a, &full[s], mask_a, hint, smem_a + s * a_stage + rn * half, k * bK, tm * bM + rn * 64);
              SM90_TMA_LOAD_MULTICAST_2D::copy(map_b, &full[s], mask_b, hint, smem_b + s * b_stage + rm * half, tn * bN + rm * 64, k * bK);
            }
          }
        }
      }
    }
  } else {
    cutlass::arch::warpgroup_reg_alloc<216>();
    const int wg_tid = tid - 128;
    TiledMMA mma = make_tiled_mma(SM90_64x128x16_F32BF16BF16_SS<GMMA::Major::K, GMMA::Major::MN>{});
    ThrMMA thr_mma = mma.get_slice(wg_tid);
    Tensor tCrA = thr_mma.make_fragment_A(thr_mma.partition_A(sA));  // (MMA,MMA_M,MMA_K,PIPE)
    Tensor tCrB = thr_mma.make_fragment_B(thr_mma.partition_B(sB));  // (MMA,MMA_N,MMA_K,PIPE)
    // Consumer thread t < 4 tells CTA t that this CTA is done with a stage, if t writes into it.
    const bool signals = shared_tiles ? wg_tid < 4 && ((wg_tid % 2) == rm || (wg_tid / 2) == rn) : wg_tid == 0;
    const int signal_rank = shared_tiles ? wg_tid : rank;
    int it = 0;
    for (int g = 0; g < my_groups; ++g) {
      auto [tm, tn] = tile_of(group0 + g * group_step);
      Tensor gC = local_tile(mC, make_shape(Int<bM>{}, Int<bN>{}), make_coord(tm, tn));
      Tensor tCgC = thr_mma.partition_C(gC);
      Tensor tCrC = thr_mma.make_fragment_C(tCgC);
      // The first k-block overwrites the accumulators (no clearing instructions
      // inside the WGMMA pipeline: they would serialize it, ptxas C7514).
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
        warpgroup_wait<KP_WAIT>();
        warpgroup_fence_operand(tCrC);
#if KP_WAIT == 0
        cutlass::arch::ClusterBarrier::arrive(&empty[s], signal_rank, signals);
#else
        if (k > 0) cutlass::arch::ClusterBarrier::arrive(&empty[(it - 1) % bP], signal_rank, signals);
#endif
        ++it;
      } while (++k < k_tiles);
#if KP_WAIT == 1
      warpgroup_wait<0>();
      warpgroup_fence_operand(tCrC);
      cutlass::arch::ClusterBarrier::arrive(&empty[(it - 1) % bP], signal_rank, signals);
#endif
      CUTE_UNROLL
      for (int i = 0; i < size(tCrC); ++i) tCgC(i) = TC(tCrC(i));
    }
  }
  // No CTA leaves while a peer may still write into its shared memory, and
  // the slot is free again only when every load that read its maps is done.
  if constexpr (KP_CLUSTER == 1) __syncthreads(); else cute::cluster_sync();
  if (tid == 0 && slot >= 0) atomicExch(&kp_tmap_taken[slot], 0u);
#endif
}

#if KP_CLUSTER == 1
__global__ void __launch_bounds__(256, 2) matmul_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N) {
#else
__global__ void __cluster_dims__(KP_CLUSTER, 1, 1) __launch_bounds__(256, 2) matmul_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N) {
#endif
  kp_tma_gemm(A, B, C, N, N, N);
}
