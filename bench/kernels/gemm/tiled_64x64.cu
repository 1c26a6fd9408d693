// TiledContraction's form: 64x64 shared-memory tiles, 4x4 outputs a thread, over (row, col) with k as the contraction; launch block = 256, grid = ceil_div((N) * (N), 4096)
// The naive fp32 GEMM the SIMT forms are measured on (bench/gemm_gpu.sh, tests/gpu.rs): one thread
// an output, row-major A and B. The other files here are TiledContraction's forms of it, kept equal
// to the generator's output by `cargo test -p kernelpro-recipes gemm_tests` (UPDATE_EXPECT=1
// rewrites them); bench/gemm_gpu.sh changes `let N` for other sizes.
// kernelpro: let N = 4096
// kernelpro: grid = ceil_div((N) * (N), 4096)
// kernelpro: block = 256
// kernelpro: A = in float[N * N] uniform(-1, 1)
// kernelpro: B = in float[N * N] uniform(-1, 1)
// kernelpro: C = out float[N * N]
// kernelpro: n = N
// kernelpro: check rtol=1e-5 atol=1e-5
// kernelpro: op = gemm N N N row
__global__ void sgemm_naive(const float* A, const float* B, float* C, int n) {
  // SIMT register-tiled contraction (kernelpro TiledContraction): 64x64 tiles, 16 deep, 4x4 outputs a thread, 256 threads a block.
  __shared__ __align__(16) float kp_As[16][64 + 4];
  __shared__ __align__(16) float kp_Bs[16][64 + 4];
  const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_nt = (int)((blockDim.x * blockDim.y * blockDim.z));
  const int kp_tr = kp_tid / 16, kp_tc = kp_tid % 16;
  const long long kp_tiles_n = ((long long)(n) + 64 - 1) / 64;
  const long long kp_tiles = ((long long)(n) + 64 - 1) / 64 * kp_tiles_n;
  const long long kp_blocks = ((long long)gridDim.x * gridDim.y * gridDim.z);
  for (long long kp_t = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_t < kp_tiles; kp_t += kp_blocks) {
    const long long kp_m0 = kp_t / kp_tiles_n * 64, kp_n0 = kp_t % kp_tiles_n * 64;
    float kp_acc[4][4];
    #pragma unroll
    for (int kp_a = 0; kp_a < 4; ++kp_a) {
      #pragma unroll
      for (int kp_b = 0; kp_b < 4; ++kp_b) {
        const int row = (int)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const int col = (int)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
        kp_acc[kp_a][kp_b] = 0;
        if (row < n && col < n) {
        float acc = 0.0f;
        kp_acc[kp_a][kp_b] = acc;
        }
      }
    }
    for (long long kp_k0 = 0; kp_k0 < (long long)(n); kp_k0 += 16) {
      for (int kp_e = kp_tid; kp_e < 16 * 64; kp_e += kp_nt) {
        const int kp_kk = kp_e % 16, kp_mm = kp_e / 16;
        const int row = (int)(kp_m0 + kp_mm);
        const int k = (int)(kp_k0 + kp_kk);
        kp_As[kp_kk][kp_mm] = (row < n && k < n) ? (float)(A[row * n + k]) : (float)0;
      }
      for (int kp_e = kp_tid; kp_e < 16 * 64; kp_e += kp_nt) {
        const int kp_kk = kp_e / 64, kp_nn = kp_e % 64;
        const int col = (int)(kp_n0 + kp_nn);
        const int k = (int)(kp_k0 + kp_kk);
        kp_Bs[kp_kk][kp_nn] = (col < n && k < n) ? (float)(B[k * n + col]) : (float)0;
      }
      __syncthreads();
      // Threads past the first 256 (a larger block) only help load the tiles.
      if (kp_tid < 256) {
      #pragma unroll
      for (int kp_kk = 0; kp_kk < 16; ++kp_kk) {
        float kp_x[4], kp_y[4];
        const float4 kp_x0 = *reinterpret_cast<const float4*>(&kp_As[kp_kk][4 * kp_tr + 0]);
        kp_x[0] = kp_x0.x;
        kp_x[1] = kp_x0.y;
        kp_x[2] = kp_x0.z;
        kp_x[3] = kp_x0.w;
        const float4 kp_y0 = *reinterpret_cast<const float4*>(&kp_Bs[kp_kk][4 * kp_tc + 0]);
        kp_y[0] = kp_y0.x;
        kp_y[1] = kp_y0.y;
        kp_y[2] = kp_y0.z;
        kp_y[3] = kp_y0.w;
        #pragma unroll
        for (int kp_a = 0; kp_a < 4; ++kp_a)
          #pragma unroll
          for (int kp_b = 0; kp_b < 4; ++kp_b) kp_acc[kp_a][kp_b] += kp_x[kp_a] * kp_y[kp_b];
      }
      }
      __syncthreads();
    }
    // Unrolled so that kp_acc stays in registers (a dynamic index would put it in local memory).
    if (kp_tid < 256) {
    #pragma unroll
    for (int kp_a = 0; kp_a < 4; ++kp_a) {
      #pragma unroll
      for (int kp_b = 0; kp_b < 4; ++kp_b) {
        const int row = (int)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const int col = (int)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
        if (!(row < n && col < n)) continue;
        float acc = 0.0f;
        acc = kp_acc[kp_a][kp_b];
        C[row * n + col] = acc;
      }
    }
    }
  }
}
