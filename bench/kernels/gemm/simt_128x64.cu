// TiledContraction's form: 128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((N) * (N), 8192)
// The naive fp32 GEMM the SIMT forms are measured on (bench/gemm_gpu.sh, tests/gpu.rs): one thread
// an output, row-major A and B. The other files here are TiledContraction's forms of it, kept equal
// to the generator's output by `cargo test -p kernelpro-recipes gemm_tests` (UPDATE_EXPECT=1
// rewrites them); bench/gemm_gpu.sh changes `let N` for other sizes.
// kernelpro: let N = 4096
// kernelpro: grid = ceil_div((N) * (N), 8192)
// kernelpro: block = 256
// kernelpro: A = in float[N * N] uniform(-1, 1)
// kernelpro: B = in float[N * N] uniform(-1, 1)
// kernelpro: C = out float[N * N]
// kernelpro: n = N
// kernelpro: check rtol=1e-5 atol=1e-5
// kernelpro: op = gemm N N N row
__global__ void sgemm_naive(const float* A, const float* B, float* C, int n) {
  // SIMT GEMM (kernelpro TiledContraction): 128x64 tiles, 16 deep, 8x4 outputs a thread, 256 threads a block, two shared buffers an operand, the next slice fetched into registers while this one is multiplied.
  __shared__ __align__(16) float kp_As[2][16][128 + 4];
  __shared__ __align__(16) float kp_Bs[2][16][64 + 4];
  const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  // A warp is 4x8 threads of the 16x16 grid: one A vector and eight consecutive B vectors a quarter-warp.
  const int kp_warp = kp_tid / 32, kp_lane = kp_tid % 32;
  const int kp_tr = kp_warp / 2 * 4 + kp_lane / 8, kp_tc = kp_warp % 2 * 8 + kp_lane % 8;
  // The tiles take 256 threads: those of a larger block skip them (the named barrier counts 256).
  const bool kp_on = kp_tid < 256;
  const long long kp_tiles_n = ((long long)(n) + 64 - 1) / 64;
  const long long kp_tiles = ((long long)(n) + 128 - 1) / 128 * kp_tiles_n;
  for (long long kp_t = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_on && kp_t < kp_tiles; kp_t += ((long long)gridDim.x * gridDim.y * gridDim.z)) {
    const long long kp_m0 = kp_t / kp_tiles_n * 128, kp_n0 = kp_t % kp_tiles_n * 64;
    float kp_acc[8][4];
    #pragma unroll
    for (int kp_a = 0; kp_a < 8; ++kp_a) {
      #pragma unroll
      for (int kp_b = 0; kp_b < 4; ++kp_b) {
        const int row = (int)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const int col = (int)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 32 * (kp_b >> 2)));
        kp_acc[kp_a][kp_b] = 0;
        if (row < n && col < n) {
        float acc = 0.0f;
        kp_acc[kp_a][kp_b] = acc;
        }
      }
    }
    const long long kp_kend = (long long)(n);
    // Every slice of this tile inside the problem: its loads need no bounds test.
    const bool kp_whole = kp_m0 + 128 <= (long long)(n) && kp_n0 + 64 <= (long long)(n) && kp_kend % 16 == 0;
    {
      const float* kp_A0 = [&]() -> const float* { const int row = (int)(kp_m0 + 0); const int k = (int)(0);  return &(A[row * n + k]); }();
      const float* kp_A1 = [&]() -> const float* { const int row = (int)(kp_m0 + 1); const int k = (int)(0);  return &(A[row * n + k]); }();
      const bool kp_vA = (long long)(n) % 4 == 0 && ((unsigned long long)kp_A0 & 15) == 0 && (kp_A1 - kp_A0) % 4 == 0;
      const float* kp_B0 = [&]() -> const float* { const int col = (int)(kp_n0 + 0); const int k = (int)(0);  return &(B[k * n + col]); }();
      const float* kp_B1 = [&]() -> const float* { const int col = (int)(kp_n0 + 0); const int k = (int)(1);  return &(B[k * n + col]); }();
      const bool kp_vB = (long long)(n) % 4 == 0 && ((unsigned long long)kp_B0 & 15) == 0 && (kp_B1 - kp_B0) % 4 == 0;
      int kp_s = 0;
    if (kp_vA && kp_vB && kp_whole) {
    float kp_rA[8], kp_rB[4];
    if (kp_kend > 0) {
      const long long kp_kn = 0;
        #pragma unroll
        for (int kp_q = 0; kp_q < 2; ++kp_q) {
          const int kp_e = kp_tid + 256 * kp_q;
          const int kp_kk = kp_e % 4 * 4, kp_xx = kp_e / 4;
          const int row = (int)(kp_m0 + kp_xx);
          const int k = (int)(kp_kn + kp_kk);
          const float4 kp_v = *reinterpret_cast<const float4*>(&(A[row * n + k]));
          kp_rA[4 * kp_q] = kp_v.x; kp_rA[4 * kp_q + 1] = kp_v.y; kp_rA[4 * kp_q + 2] = kp_v.z; kp_rA[4 * kp_q + 3] = kp_v.w;
        }
        #pragma unroll
        for (int kp_q = 0; kp_q < 1; ++kp_q) {
          const int kp_e = kp_tid + 256 * kp_q;
          const int kp_kk = kp_e / 16, kp_xx = kp_e % 16 * 4;
          const int col = (int)(kp_n0 + kp_xx);
          const int k = (int)(kp_kn + kp_kk);
          const float4 kp_v = *reinterpret_cast<const float4*>(&(B[k * n + col]));
          kp_rB[4 * kp_q] = kp_v.x; kp_rB[4 * kp_q + 1] = kp_v.y; kp_rB[4 * kp_q + 2] = kp_v.z; kp_rB[4 * kp_q + 3] = kp_v.w;
        }
        #pragma unroll
        for (int kp_q = 0; kp_q < 2; ++kp_q) {
          const int kp_e = kp_tid + 256 * kp_q;
          const int kp_kk = kp_e % 4 * 4, kp_xx = kp_e / 4;
          #pragma unroll
          for (int kp_c = 0; kp_c < 4; ++kp_c) kp_As[0][kp_kk + kp_c][kp_xx] = kp_rA[4 * kp_q + kp_c];
        }
        #pragma unroll
        for (int kp_q = 0; kp_q < 1; ++kp_q) {
          const int kp_e = kp_tid + 256 * kp_q;
          const int kp_kk = kp_e / 16, kp_xx = kp_e % 16 * 4;
          *reinterpret_cast<float4*>(&kp_Bs[0][kp_kk][kp_xx]) = make_float4(kp_rB[4 * kp_q], kp_rB[4 * kp_q + 1], kp_rB[4 * kp_q + 2], kp_rB[4 * kp_q + 3]);
        }
    }
      asm volatile("bar.sync 1, 256;" ::: "memory");
    for (long long kp_k0 = 0; kp_k0 < kp_kend; kp_k0 += 16) {
      const bool kp_more = kp_k0 + 16 < kp_kend;
      // The next slice's global loads are in flight while this one is multiplied.
      if (kp_more) {
      const long long kp_kn = kp_k0 + 16;
        #pragma unroll
        for (int kp_q = 0; kp_q < 2; ++kp_q) {
          const int kp_e = kp_tid + 256 * kp_q;
          const int kp_kk = kp_e % 4 * 4, kp_xx = kp_e / 4;
          const int row = (int)(kp_m0 + kp_xx);
          const int k = (int)(kp_kn + kp_kk);
          const float4 kp_v = *reinterpret_cast<const float4*>(&(A[row * n + k]));
          kp_rA[4 * kp_q] = kp_v.x; kp_rA[4 * kp_q + 1] = kp_v.y; kp_rA[4 * kp_q + 2] = kp_v.z; kp_rA[4 * kp_q + 3] = kp_v.w;
        }
        #pragma unroll
        for (int kp_q = 0; kp_q < 1; ++kp_q) {
          const int kp_e = kp_tid + 256 * kp_q;
          const int kp_kk = kp_e / 16, kp_xx = kp_e % 16 * 4;
          const int col = (int)(kp_n0 + kp_xx);
          const int k = (int)(kp_kn + kp_kk);
          const float4 kp_v = *reinterpret_cast<const float4*>(&(B[k * n + col]));
          kp_rB[4 * kp_q] = kp_v.x; kp_rB[4 * kp_q + 1] = kp_v.y; kp_rB[4 * kp_q + 2] = kp_v.z; kp_rB[4 * kp_q + 3] = kp_v.w;
        }
      }
      #pragma unroll
      for (int kp_kk = 0; kp_kk < 16; ++kp_kk) {
        float kp_x[8], kp_y[4];
        const float4 kp_x0 = *reinterpret_cast<const float4*>(&kp_As[kp_s][kp_kk][4 * kp_tr + 0]);
        kp_x[0] = kp_x0.x;
        kp_x[1] = kp_x0.y;
        kp_x[2] = kp_x0.z;
        kp_x[3] = kp_x0.w;
        const float4 kp_x1 = *reinterpret_cast<const float4*>(&kp_As[kp_s][kp_kk][4 * kp_tr + 64]);
        kp_x[4] = kp_x1.x;
        kp_x[5] = kp_x1.y;
        kp_x[6] = kp_x1.z;
        kp_x[7] = kp_x1.w;
        const float4 kp_y0 = *reinterpret_cast<const float4*>(&kp_Bs[kp_s][kp_kk][4 * kp_tc + 0]);
        kp_y[0] = kp_y0.x;
        kp_y[1] = kp_y0.y;
        kp_y[2] = kp_y0.z;
        kp_y[3] = kp_y0.w;
        #pragma unroll
        for (int kp_a = 0; kp_a < 8; ++kp_a)
          #pragma unroll
          for (int kp_b = 0; kp_b < 4; ++kp_b) kp_acc[kp_a][kp_b] += kp_x[kp_a] * kp_y[kp_b];
      }
      // The other buffer was last read before the previous barrier.
      if (kp_more) {
        #pragma unroll
        for (int kp_q = 0; kp_q < 2; ++kp_q) {
          const int kp_e = kp_tid + 256 * kp_q;
          const int kp_kk = kp_e % 4 * 4, kp_xx = kp_e / 4;
          #pragma unroll
          for (int kp_c = 0; kp_c < 4; ++kp_c) kp_As[kp_s ^ 1][kp_kk + kp_c][kp_xx] = kp_rA[4 * kp_q + kp_c];
        }
        #pragma unroll
        for (int kp_q = 0; kp_q < 1; ++kp_q) {
          const int kp_e = kp_tid + 256 * kp_q;
          const int kp_kk = kp_e / 16, kp_xx = kp_e % 16 * 4;
          *reinterpret_cast<float4*>(&kp_Bs[kp_s ^ 1][kp_kk][kp_xx]) = make_float4(kp_rB[4 * kp_q], kp_rB[4 * kp_q + 1], kp_rB[4 * kp_q + 2], kp_rB[4 * kp_q + 3]);
        }
      }
      asm volatile("bar.sync 1, 256;" ::: "memory");
      kp_s ^= 1;
    }
    } else {
    for (long long kp_k0 = 0; kp_k0 < kp_kend; kp_k0 += 16) {
      const long long kp_kn = kp_k0;
        #pragma unroll
        for (int kp_q = 0; kp_q < 8; ++kp_q) {
          const int kp_e = kp_tid + 256 * kp_q;
          const int kp_kk = kp_e % 16, kp_xx = kp_e / 16;
          const int row = (int)(kp_m0 + kp_xx);
          const int k = (int)(kp_kn + kp_kk);
          kp_As[0][kp_kk][kp_xx] = (row < n && k < n) ? (float)(A[row * n + k]) : (float)0;
        }
        #pragma unroll
        for (int kp_q = 0; kp_q < 4; ++kp_q) {
          const int kp_e = kp_tid + 256 * kp_q;
          const int kp_kk = kp_e / 64, kp_xx = kp_e % 64;
          const int col = (int)(kp_n0 + kp_xx);
          const int k = (int)(kp_kn + kp_kk);
          kp_Bs[0][kp_kk][kp_xx] = (col < n && k < n) ? (float)(B[k * n + col]) : (float)0;
        }
      asm volatile("bar.sync 1, 256;" ::: "memory");
      #pragma unroll
      for (int kp_kk = 0; kp_kk < 16; ++kp_kk) {
        float kp_x[8], kp_y[4];
        const float4 kp_x0 = *reinterpret_cast<const float4*>(&kp_As[kp_s][kp_kk][4 * kp_tr + 0]);
        kp_x[0] = kp_x0.x;
        kp_x[1] = kp_x0.y;
        kp_x[2] = kp_x0.z;
        kp_x[3] = kp_x0.w;
        const float4 kp_x1 = *reinterpret_cast<const float4*>(&kp_As[kp_s][kp_kk][4 * kp_tr + 64]);
        kp_x[4] = kp_x1.x;
        kp_x[5] = kp_x1.y;
        kp_x[6] = kp_x1.z;
        kp_x[7] = kp_x1.w;
        const float4 kp_y0 = *reinterpret_cast<const float4*>(&kp_Bs[kp_s][kp_kk][4 * kp_tc + 0]);
        kp_y[0] = kp_y0.x;
        kp_y[1] = kp_y0.y;
        kp_y[2] = kp_y0.z;
        kp_y[3] = kp_y0.w;
        #pragma unroll
        for (int kp_a = 0; kp_a < 8; ++kp_a)
          #pragma unroll
          for (int kp_b = 0; kp_b < 4; ++kp_b) kp_acc[kp_a][kp_b] += kp_x[kp_a] * kp_y[kp_b];
      }
      asm volatile("bar.sync 1, 256;" ::: "memory");
    }
    }
    }
    // Unrolled so that kp_acc stays in registers (a dynamic index would put it in local memory).
    #pragma unroll
    for (int kp_a = 0; kp_a < 8; ++kp_a) {
      #pragma unroll
      for (int kp_b = 0; kp_b < 4; ++kp_b) {
        const int row = (int)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const int col = (int)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 32 * (kp_b >> 2)));
        if (!(row < n && col < n)) continue;
        float acc = 0.0f;
        acc = kp_acc[kp_a][kp_b];
        C[row * n + col] = acc;
      }
    }
  }
}
