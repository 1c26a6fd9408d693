// Probe for a warp-specialized WGMMA main loop (bf16, A row-major, B row-major),
// built like a generated file: bench harness.cu with -include this file.
// Warpgroup 0 copies with cp.async, warpgroup 1 runs WGMMA; they hand stages
// over through hardware named barriers (no shared memory for mbarriers, so
// three 16 KiB stages still fit the 48 KiB of static shared memory).
// Variants: KP_BK (16/32), KP_STAGES, KP_PRODUCER_REGS / KP_CONSUMER_REGS,
// KP_WAIT (wgmma batches kept in flight by the consumer: 0 or 1), KP_LAG,
// KP_PF (below). bench/cute_gemm/probe_sweep.sh runs the measured ones.
#include <cuda_bf16.h>
#include <cute/tensor.hpp>
#include <cutlass/arch/reg_reconfig.h>
#include <cstdint>

#ifndef KP_BK
#define KP_BK 32
#endif
#ifndef KP_STAGES
#define KP_STAGES 3
#endif
#ifndef KP_PRODUCER_REGS
#define KP_PRODUCER_REGS 40
#endif
#ifndef KP_CONSUMER_REGS
#define KP_CONSUMER_REGS 216
#endif
#ifndef KP_WAIT
#define KP_WAIT 1
#endif
// L1 prefetch distance in k-tiles (0: none): the loader asks L1 for k-tile
// k + KP_PF while it copies k-tile k, so that the copy later hits in L1 and
// L1 serves as extra pipeline depth beyond the 48 KiB of stages.
#ifndef KP_PF
#define KP_PF 0
#endif
#if KP_PF > 0
#define KP_CP_ASYNC SM80_CP_ASYNC_CACHEALWAYS
#else
#define KP_CP_ASYNC SM80_CP_ASYNC_CACHEGLOBAL
#endif
// cp.async groups (stages) the loader keeps in flight before it marks the oldest full.
#ifndef KP_LAG
#define KP_LAG 1
#endif

static __device__ __forceinline__ void kp_ws_gemm(const void* a_ptr, const void* b_ptr, void* c_ptr, int M, int N, int K) {
  using namespace cute;
  using TA = cute::bfloat16_t;
  using TB = cute::bfloat16_t;
  using TC = cute::bfloat16_t;
  const TA* A = static_cast<const TA*>(a_ptr);
  const TB* B = static_cast<const TB*>(b_ptr);
  TC* C = static_cast<TC*>(c_ptr);
  Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(K, Int<1>{}));
  Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(Int<1>{}, N));
  Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, Int<1>{}));
  const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int ctas = gridDim.x * gridDim.y * gridDim.z;
  auto bM = Int<128>{};
  auto bN = Int<128>{};
  auto bK = Int<KP_BK>{};
  auto bP = Int<KP_STAGES>{};
  auto cta_tiler = make_shape(bM, bN, bK);
#if defined(CUTE_ARCH_MMA_SM90A_ENABLED)
  // A K-major row of the k-tile is 2*KP_BK bytes: the swizzle atom of that width.
#if KP_BK == 16
  using AtomA = GMMA::Layout_K_SW32_Atom<TA>;
#elif KP_BK == 32
  using AtomA = GMMA::Layout_K_SW64_Atom<TA>;
#else
  using AtomA = GMMA::Layout_K_SW128_Atom<TA>;
#endif
  auto sA_layout = tile_to_shape(AtomA{}, make_shape(bM, bK, bP));
  auto sB_layout = tile_to_shape(GMMA::Layout_MN_SW128_Atom<TB>{}, make_shape(bN, bK, bP));
  __shared__ alignas(1024) TA smem_a[cosize_v<decltype(sA_layout)>];
  __shared__ alignas(1024) TB smem_b[cosize_v<decltype(sB_layout)>];
  Tensor sA = make_tensor(make_smem_ptr(smem_a), sA_layout);
  Tensor sB = make_tensor(make_smem_ptr(smem_b), sB_layout);
  const int tiles_m = M / bM;
  const int tiles = tiles_m * (N / bN);
  const int k_tiles = K / bK;
  // This CTA's k-tiles over all of its output tiles, as one stream.
  const int my_tiles = cta < tiles ? (tiles - cta + ctas - 1) / ctas : 0;
  const int total = my_tiles * k_tiles;
  // Hardware named barriers 1..bP (stage full) and bP+1..2bP (stage empty):
  // 128 loader threads arrive, 128 MMA threads wait, or the other way round.
  auto bar_sync = [](int id) { asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory"); };
  auto bar_arrive = [](int id) { asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory"); };
  const int warpgroup = __shfl_sync(0xffffffff, tid / 128, 0);
  const int wg_tid = tid % 128;
  if (warpgroup == 0) {
    cutlass::arch::warpgroup_reg_dealloc<KP_PRODUCER_REGS>();
    constexpr int a_chunks = KP_BK / 8;  // 16-byte chunks in a K-major row of the tile
    TiledCopy copy_a = make_tiled_copy(Copy_Atom<KP_CP_ASYNC<uint128_t>, TA>{},
        Layout<Shape<Int<128 / a_chunks>, Int<a_chunks>>, Stride<Int<a_chunks>, _1>>{}, Layout<Shape<_1, _8>>{});
    TiledCopy copy_b = make_tiled_copy(Copy_Atom<KP_CP_ASYNC<uint128_t>, TB>{},
        Layout<Shape<_16, _8>, Stride<_1, _16>>{}, Layout<Shape<_8, _1>>{});
    ThrCopy thr_copy_a = copy_a.get_slice(wg_tid);
    ThrCopy thr_copy_b = copy_b.get_slice(wg_tid);
    Tensor tAsA = thr_copy_a.partition_D(as_position_independent_swizzle_tensor(sA));
    Tensor tBsB = thr_copy_b.partition_D(as_position_independent_swizzle_tensor(sB));
    int it = 0;
    for (int tile = cta; tile < tiles; tile += ctas) {
      auto cta_coord = make_coord(tile % tiles_m, tile / tiles_m, _);
      Tensor tAgA = thr_copy_a.partition_S(local_tile(mA, cta_tiler, cta_coord, Step<_1, X, _1>{}));
      Tensor tBgB = thr_copy_b.partition_S(local_tile(mB, cta_tiler, cta_coord, Step<X, _1, _1>{}));
      CUTE_NO_UNROLL
      for (int k = 0; k < k_tiles; ++k, ++it) {
#if KP_PF > 0
        if (k + KP_PF < k_tiles) {
          // Row wg_tid of A's k-tile (bK*2 bytes); B's k-tile has bK rows of 256 bytes (two lines each).
          const int kp = (k + KP_PF) * KP_BK;
          asm volatile("prefetch.global.L1 [%0];" ::"l"(A + size_t((tile % tiles_m) * 128 + wg_tid) * K + kp));
          if (wg_tid < 2 * KP_BK)
            asm volatile("prefetch.global.L1 [%0];" ::"l"(B + size_t(kp + wg_tid / 2) * N + (tile / tiles_m) * 128 + (wg_tid % 2) * 64));
        }
#endif
        const int stage = it % bP;
        if (it >= bP) bar_sync(1 + bP + stage);
        copy(copy_a, tAgA(_, _, _, k), tAsA(_, _, _, stage));
        copy(copy_b, tBgB(_, _, _, k), tBsB(_, _, _, stage));
        cp_async_fence();
        if (it >= KP_LAG) {
          // The oldest stage in flight has landed: make it visible to WGMMA (async proxy).
          cp_async_wait<KP_LAG>();
          asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
          bar_arrive(1 + (it - KP_LAG) % bP);
        }
      }
    }
    cp_async_wait<0>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    for (int done = it > KP_LAG ? it - KP_LAG : 0; done < it; ++done) bar_arrive(1 + done % bP);
  } else {
    cutlass::arch::warpgroup_reg_alloc<KP_CONSUMER_REGS>();
    TiledMMA mma = make_tiled_mma(SM90_64x128x16_F32BF16BF16_SS<GMMA::Major::K, GMMA::Major::MN>{});
    ThrMMA thr_mma = mma.get_slice(wg_tid);
    Tensor tCrA = thr_mma.make_fragment_A(thr_mma.partition_A(sA));  // (MMA,MMA_M,MMA_K,PIPE)
    Tensor tCrB = thr_mma.make_fragment_B(thr_mma.partition_B(sB));  // (MMA,MMA_N,MMA_K,PIPE)
    int it = 0;
    // Releases the stage of k-tile `done` unless the loader has no later k-tile for it.
    auto release = [&](int done) { if (done + bP < total) bar_arrive(1 + bP + done % bP); };
    for (int tile = cta; tile < tiles; tile += ctas) {
      auto cta_coord = make_coord(tile % tiles_m, tile / tiles_m, _);
      Tensor tCgC = thr_mma.partition_C(local_tile(mC, cta_tiler, cta_coord, Step<_1, _1, X>{}));
      Tensor tCrC = thr_mma.make_fragment_C(tCgC);
      mma.accumulate_ = GMMA::ScaleOut::Zero;
      int k = 0;
      CUTE_NO_UNROLL
      do {
        const int stage = it % bP;
        bar_sync(1 + stage);
        warpgroup_fence_operand(tCrC);
        warpgroup_arrive();
        CUTE_UNROLL
        for (int kb = 0; kb < size<2>(tCrA); ++kb) {
          gemm(mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), tCrC);
          mma.accumulate_ = GMMA::ScaleOut::One;
        }
        warpgroup_commit_batch();
        warpgroup_wait<KP_WAIT>();
        warpgroup_fence_operand(tCrC);
#if KP_WAIT == 1
        if (k >= 1) release(it - 1);
#else
        release(it);
#endif
        ++it;
      } while (++k < k_tiles);
      warpgroup_wait<0>();
      warpgroup_fence_operand(tCrC);
#if KP_WAIT == 1
      release(it - 1);
#endif
      CUTE_UNROLL
      for (int i = 0; i < size(tCrC); ++i) tCgC(i) = TC(tCrC(i));
    }
  }
#endif
}

__global__ void __launch_bounds__(256, 2) matmul_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N) {
  kp_ws_gemm(A, B, C, N, N, N);
}
