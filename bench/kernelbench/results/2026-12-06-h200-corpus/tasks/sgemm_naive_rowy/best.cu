// Square matmul, first version: 2D launch, row on y and column on x; every thread re-reads a row of A and a column of B.
// class: contraction
// torch: C = (A.view(N, N) @ B.view(N, N)).reshape(-1)
#include <cute/tensor.hpp>
#include <cstdint>

// CuTe GEMM: 128x128x8 CTA tiles, 3-stage cp.async pipeline, fp32 UniversalFMA, 256 threads as a persistent grid.
static __device__ __forceinline__ void kp_cute_gemm_sgemm_naive(const void* a_ptr, const void* b_ptr, void* c_ptr, int M, int N, int K) {
  using namespace cute;
  using TA = float;
  using TB = float;
  using TC = float;
  const TA* A = static_cast<const TA*>(a_ptr);
  const TB* B = static_cast<const TB*>(b_ptr);
  TC* C = static_cast<TC*>(c_ptr);
  // (M,K), (N,K) and (M,N) views of the three matrices.
  Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(K, Int<1>{}));
  Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(Int<1>{}, N));
  Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, Int<1>{}));
  const int threads = blockDim.x * blockDim.y * blockDim.z;
  const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int ctas = gridDim.x * gridDim.y * gridDim.z;
  auto bM = Int<128>{};
  auto bN = Int<128>{};
  auto bK = Int<8>{};
  auto bP = Int<3>{};
  const bool aligned = ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B)) % 16) == 0;
  if (threads != 256 || M % bM != 0 || N % bN != 0 || K % bK != 0 || K < bK || !aligned) {
    // Outside what the tiles cover: one thread per output over the same tensors.
    for (long long i = (long long)cta * threads + tid; i < (long long)M * N; i += (long long)ctas * threads) {
      const int m = int(i / N), n = int(i % N);
      float acc = 0.f;
      for (int k = 0; k < K; ++k) acc += float(mA(m, k)) * float(mB(n, k));
      mC(m, n) = TC(acc);
    }
    return;
  }
  auto cta_tiler = make_shape(bM, bN, bK);
  auto sA_layout = tile_to_shape(Layout<Shape<_128, _8>, Stride<_1, Int<129>>>{}, make_shape(bM, bK, bP));
  auto sB_layout = tile_to_shape(Layout<Shape<_128, _8>>{}, make_shape(bN, bK, bP));
  __shared__ alignas(128) TA smem_a[cosize_v<decltype(sA_layout)>];
  __shared__ alignas(128) TB smem_b[cosize_v<decltype(sB_layout)>];
  Tensor sA = make_tensor(make_smem_ptr(smem_a), sA_layout);  // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smem_b), sB_layout);  // (BLK_N,BLK_K,PIPE)
  TiledCopy copy_a = make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS<float>, float>{}, Layout<Shape<_32, _8>, Stride<_8, _1>>{}, Layout<Shape<_1, _1>>{});
  TiledCopy copy_b = make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS<uint128_t>, float>{}, Layout<Shape<_32, _8>>{}, Layout<Shape<_4, _1>>{});
  TiledMMA mma = make_tiled_mma(UniversalFMA<float, float, float>{}, Layout<Shape<_16, _16, _1>>{});
  Copy_Atom<AutoVectorizingCopy, float> s2r_atom_a;
  Copy_Atom<AutoVectorizingCopy, float> s2r_atom_b;
  CUTE_STATIC_ASSERT_V(size(copy_a) == size(mma));
  CUTE_STATIC_ASSERT_V(size(copy_b) == size(mma));
  CUTE_STATIC_ASSERT_V(size(mma) == Int<256>{});

  ThrCopy thr_copy_a = copy_a.get_slice(tid);
  ThrCopy thr_copy_b = copy_b.get_slice(tid);
  ThrMMA thr_mma = mma.get_slice(tid);
  ThrCopy s2r_thr_copy_a = make_tiled_copy_A(s2r_atom_a, mma).get_slice(tid);
  ThrCopy s2r_thr_copy_b = make_tiled_copy_B(s2r_atom_b, mma).get_slice(tid);
  Tensor tAsA = thr_copy_a.partition_D(sA);        // (CPY,CPY_M,CPY_K,PIPE)
  Tensor tBsB = thr_copy_b.partition_D(sB);        // (CPY,CPY_N,CPY_K,PIPE)
  Tensor tXsA = s2r_thr_copy_a.partition_S(sA);    // (CPY,MMA_M,MMA_K,PIPE)
  Tensor tXsB = s2r_thr_copy_b.partition_S(sB);    // (CPY,MMA_N,MMA_K,PIPE)
  Tensor tCrA = thr_mma.partition_fragment_A(sA(_, _, 0));  // (MMA,MMA_M,MMA_K)
  Tensor tCrB = thr_mma.partition_fragment_B(sB(_, _, 0));  // (MMA,MMA_N,MMA_K)
  Tensor tXrA = s2r_thr_copy_a.retile_D(tCrA);
  Tensor tXrB = s2r_thr_copy_b.retile_D(tCrB);
  auto K_PIPE_MAX = size<3>(tAsA);
  auto K_BLOCK_MAX = size<2>(tCrA);

  const int tiles_m = M / bM;
  for (int tile = cta; tile < tiles_m * (N / bN); tile += ctas) {
    auto cta_coord = make_coord(tile % tiles_m, tile / tiles_m, _);
    Tensor gA = local_tile(mA, cta_tiler, cta_coord, Step<_1, X, _1>{});  // (BLK_M,BLK_K,k)
    Tensor gB = local_tile(mB, cta_tiler, cta_coord, Step<X, _1, _1>{});  // (BLK_N,BLK_K,k)
    Tensor gC = local_tile(mC, cta_tiler, cta_coord, Step<_1, _1, X>{});  // (BLK_M,BLK_N)
    Tensor tAgA = thr_copy_a.partition_S(gA);
    Tensor tBgB = thr_copy_b.partition_S(gB);
    Tensor tCgC = thr_mma.partition_C(gC);
    Tensor tCrC = thr_mma.make_fragment_C(tCgC);
    clear(tCrC);

    // Fill all stages but one.
    int k_tile_count = size<3>(tAgA);
    int k_tile_next = 0;
    CUTE_UNROLL
    for (int k_pipe = 0; k_pipe < K_PIPE_MAX - 1; ++k_pipe) {
      copy(copy_a, tAgA(_, _, _, k_tile_next), tAsA(_, _, _, k_pipe));
      copy(copy_b, tBgB(_, _, _, k_tile_next), tBsB(_, _, _, k_pipe));
      cp_async_fence();
      --k_tile_count;
      if (k_tile_count > 0) ++k_tile_next;
    }
    int smem_pipe_read = 0;
    int smem_pipe_write = K_PIPE_MAX - 1;
    Tensor tXsA_p = tXsA(_, _, _, smem_pipe_read);
    Tensor tXsB_p = tXsB(_, _, _, smem_pipe_read);
    cp_async_wait<K_PIPE_MAX - 2>();
    __syncthreads();
    copy(s2r_atom_a, tXsA_p(_, _, Int<0>{}), tXrA(_, _, Int<0>{}));
    copy(s2r_atom_b, tXsB_p(_, _, Int<0>{}), tXrB(_, _, Int<0>{}));

    // Main loop: global->shared for a later k-tile, shared->registers for the
    // next k-block and the MMAs of this one all overlap.
    CUTE_NO_UNROLL
    while (k_tile_count > -(K_PIPE_MAX - 1)) {
      CUTE_UNROLL
      for (int k_block = 0; k_block < K_BLOCK_MAX; ++k_block) {
        if (k_block == K_BLOCK_MAX - 1) {
          tXsA_p = tXsA(_, _, _, smem_pipe_read);
          tXsB_p = tXsB(_, _, _, smem_pipe_read);
          cp_async_wait<K_PIPE_MAX - 2>();
          __syncthreads();
        }
        auto k_block_next = (k_block + Int<1>{}) % K_BLOCK_MAX;
        copy(s2r_atom_a, tXsA_p(_, _, k_block_next), tXrA(_, _, k_block_next));
        copy(s2r_atom_b, tXsB_p(_, _, k_block_next), tXrB(_, _, k_block_next));
        if (k_block == 0) {
          copy(copy_a, tAgA(_, _, _, k_tile_next), tAsA(_, _, _, smem_pipe_write));
          copy(copy_b, tBgB(_, _, _, k_tile_next), tBsB(_, _, _, smem_pipe_write));
          cp_async_fence();
          --k_tile_count;
          if (k_tile_count > 0) ++k_tile_next;
          smem_pipe_write = smem_pipe_read;
          smem_pipe_read = (smem_pipe_read == K_PIPE_MAX - 1) ? 0 : smem_pipe_read + 1;
        }
        gemm(mma, tCrA(_, _, k_block), tCrB(_, _, k_block), tCrC);
      }
    }

    CUTE_UNROLL
    for (int i = 0; i < size(tCrC); ++i) tCgC(i) = TC(tCrC(i));
    // The next tile's prologue overwrites the stages.
    cp_async_wait<0>();
    __syncthreads();
  }
}

// kernelpro: let N = 2048
// kernelpro: grid = (ceil_div(N, 16), ceil_div(N, 16))
// kernelpro: block = (16, 16)
// kernelpro: A = in float[N * N] uniform(-1, 1)
// kernelpro: B = in float[N * N] uniform(-1, 1)
// kernelpro: C = out float[N * N]
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-3
// kernelpro: op = gemm N N N row
__global__ void __launch_bounds__(256) sgemm_naive(const float* A, const float* B, float* C, int n) {
  kp_cute_gemm_sgemm_naive(A, B, C, int(n), int(n), int(n));
}
