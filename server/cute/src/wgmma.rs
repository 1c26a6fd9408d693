//! The Hopper (sm_90a) main loop for 16-bit inputs: warpgroup MMAs (WGMMA)
//! that read both operands straight from shared memory.
//!
//! The kernel cannot add host code, so there are no TMA descriptors: every
//! thread loads with 16-byte `cp.async` into the GMMA-swizzled layouts that
//! WGMMA descriptors address, as CUTLASS's `wgmma_sm90.cu` tutorial does.
//! Each warpgroup (128 threads) owns 64 rows of the 128×128 tile per
//! `64x128x16` atom; 128 threads run the two atoms of the M tile in turn.
//! The loop keeps one WGMMA batch in flight while the next stage's copies are
//! issued, and is compiled only where `CUTE_ARCH_MMA_SM90A_ENABLED` is set
//! (nvcc `-arch=sm_90a`); other targets get the SM80 loop of the same file.

use crate::shape::Elem;

/// `@GMMA_…@` replacements for [`MAINLOOP`]: the shared-memory layout atoms
/// for A and B (by majorness, K tile 32) and the tiled MMA.
pub(crate) fn replacements(elem: Elem, a_k_major: bool, b_k_major: bool, threads: u32) -> [(&'static str, String); 3] {
    let ty = elem.cute();
    // A K-major row of the 32-wide K tile is 64 bytes: the SW64 atom (8×32).
    // MN-major tiles are 128 elements wide: the SW128 atom (64×8).
    let atom = |k_major: bool| {
        if k_major {
            format!("GMMA::Layout_K_SW64_Atom<{ty}>{{}}")
        } else {
            format!("GMMA::Layout_MN_SW128_Atom<{ty}>{{}}")
        }
    };
    let major = |k_major: bool| {
        if k_major { "GMMA::Major::K" } else { "GMMA::Major::MN" }
    };
    let op = match elem {
        Elem::Bf16 => "SM90_64x128x16_F32BF16BF16_SS",
        _ => "SM90_64x128x16_F32F16F16_SS",
    };
    let warpgroups = threads / 128;
    [
        ("@GMMA_SMEM_A@", atom(a_k_major)),
        ("@GMMA_SMEM_B@", atom(b_k_major)),
        (
            "@GMMA_MMA@",
            format!(
                "make_tiled_mma({op}<{}, {}>{{}}, Layout<Shape<_{warpgroups}, _1, _1>>{{}})",
                major(a_k_major),
                major(b_k_major)
            ),
        ),
    ]
}

/// The WGMMA main loop (the function body after the shared head).
pub(crate) const MAINLOOP: &str = r#"  auto sA_layout = tile_to_shape(@GMMA_SMEM_A@, make_shape(bM, bK, bP));
  auto sB_layout = tile_to_shape(@GMMA_SMEM_B@, make_shape(bN, bK, bP));
  // WGMMA descriptors address the swizzle from the atom's base: align to the
  // largest swizzle period (1024 bytes).
  __shared__ alignas(1024) TA smem_a[cosize_v<decltype(sA_layout)>];
  __shared__ alignas(1024) TB smem_b[cosize_v<decltype(sB_layout)>];
  Tensor sA = make_tensor(make_smem_ptr(smem_a), sA_layout);  // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smem_b), sB_layout);  // (BLK_N,BLK_K,PIPE)
  TiledCopy copy_a = @COPY_A@;
  TiledCopy copy_b = @COPY_B@;
  TiledMMA mma = @GMMA_MMA@;
  CUTE_STATIC_ASSERT_V(size(copy_a) == size(mma));
  CUTE_STATIC_ASSERT_V(size(copy_b) == size(mma));
  CUTE_STATIC_ASSERT_V(size(mma) == Int<@THREADS@>{});

  ThrCopy thr_copy_a = copy_a.get_slice(tid);
  ThrCopy thr_copy_b = copy_b.get_slice(tid);
  Tensor tAsA = thr_copy_a.partition_D(as_position_independent_swizzle_tensor(sA));  // (CPY,CPY_M,CPY_K,PIPE)
  Tensor tBsB = thr_copy_b.partition_D(as_position_independent_swizzle_tensor(sB));  // (CPY,CPY_N,CPY_K,PIPE)
  ThrMMA thr_mma = mma.get_slice(tid);
  // Shared-memory descriptors, not registers: WGMMA reads the stages in place.
  Tensor tCrA = thr_mma.make_fragment_A(thr_mma.partition_A(sA));  // (MMA,MMA_M,MMA_K,PIPE)
  Tensor tCrB = thr_mma.make_fragment_B(thr_mma.partition_B(sB));  // (MMA,MMA_N,MMA_K,PIPE)

  const int tiles_m = M / bM;
  const int k_tiles = K / bK;
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

    // Fill all stages but one (one cp.async group a stage, empty past K).
    CUTE_UNROLL
    for (int s = 0; s < bP - 1; ++s) {
      if (s < k_tiles) {
        copy(copy_a, tAgA(_, _, _, s), tAsA(_, _, _, s));
        copy(copy_b, tBgB(_, _, _, s), tBsB(_, _, _, s));
      }
      cp_async_fence();
    }
    int smem_pipe_read = 0;
    int smem_pipe_write = bP - 1;
    // K >= bK (the head sends smaller K to the fallback), so a do-while: a
    // loop that may run zero times makes ptxas serialize every WGMMA (C7514).
    int k = 0;
    CUTE_NO_UNROLL
    do {
      // This thread's part of k-tile k has landed; the proxy fence makes the
      // generic-proxy cp.async writes visible to WGMMA (async proxy), and the
      // barrier makes every thread's part visible.
      cp_async_wait<bP - 2>();
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      __syncthreads();
      warpgroup_fence_operand(tCrC);
      warpgroup_arrive();
      gemm(mma, tCrA(_, _, _, smem_pipe_read), tCrB(_, _, _, smem_pipe_read), tCrC);
      warpgroup_commit_batch();
      // Keep this batch in flight; the previous one (k-tile k-1) is done in
      // this warpgroup, and after the barrier in every warpgroup, so its
      // stage can take k-tile k + bP - 1.
      warpgroup_wait<1>();
      warpgroup_fence_operand(tCrC);
      __syncthreads();
      if (k + bP - 1 < k_tiles) {
        copy(copy_a, tAgA(_, _, _, k + bP - 1), tAsA(_, _, _, smem_pipe_write));
        copy(copy_b, tBgB(_, _, _, k + bP - 1), tBsB(_, _, _, smem_pipe_write));
      }
      cp_async_fence();
      smem_pipe_write = smem_pipe_read;
      smem_pipe_read = (smem_pipe_read == bP - 1) ? 0 : smem_pipe_read + 1;
    } while (++k < k_tiles);
    warpgroup_wait<0>();
    warpgroup_fence_operand(tCrC);

    CUTE_UNROLL
    for (int i = 0; i < size(tCrC); ++i) @STORE@
    // The next tile's prologue overwrites the stages.
    cp_async_wait<0>();
    __syncthreads();
  }
"#;
