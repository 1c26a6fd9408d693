// Square matmul with the row index on threadIdx.x: neighbouring threads walk different rows of A and write C
// N floats apart.
// class: contraction
// torch: c = (a.view(N, N) @ b.view(N, N)).reshape(-1)
// kernelpro: let N = 2048
// kernelpro: grid = (ceil_div(N, 32), ceil_div(N, 32))
// kernelpro: block = (32, 32)
// kernelpro: a = in float[N * N] uniform(-1, 1)
// kernelpro: b = in float[N * N] uniform(-1, 1)
// kernelpro: c = out float[N * N]
// kernelpro: M = N
// kernelpro: check rtol=1e-4 atol=1e-3
__global__ void mm_kernel(int M, const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c) {
  // SIMT register-tiled contraction (kernelpro TiledContraction): 64x64 tiles, 16 deep, 4x4 outputs a thread, 256 threads a block.
  __shared__ __align__(16) float kp_As[16][64 + 4];
  __shared__ __align__(16) float kp_Bs[16][64 + 4];
  const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_nt = (int)((blockDim.x * blockDim.y * blockDim.z));
  const int kp_tr = kp_tid / 16, kp_tc = kp_tid % 16;
  const long long kp_tiles_n = ((long long)(M) + 64 - 1) / 64;
  const long long kp_tiles = ((long long)(M) + 64 - 1) / 64 * kp_tiles_n;
  const long long kp_blocks = ((long long)gridDim.x * gridDim.y * gridDim.z);
  for (long long kp_t = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_t < kp_tiles; kp_t += kp_blocks) {
    const long long kp_m0 = kp_t / kp_tiles_n * 64, kp_n0 = kp_t % kp_tiles_n * 64;
    float kp_acc[4][4];
    #pragma unroll
    for (int kp_a = 0; kp_a < 4; ++kp_a) {
      #pragma unroll
      for (int kp_b = 0; kp_b < 4; ++kp_b) {
        const unsigned x = (unsigned)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const unsigned y = (unsigned)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
        kp_acc[kp_a][kp_b] = 0;
        if (x < M && y < M) {
        float tmp = 0.0f;
        kp_acc[kp_a][kp_b] = tmp;
        }
      }
    }
    for (long long kp_k0 = 0; kp_k0 < (long long)(M); kp_k0 += 16) {
      for (int kp_e = kp_tid; kp_e < 16 * 64; kp_e += kp_nt) {
        const int kp_kk = kp_e % 16, kp_mm = kp_e / 16;
        const unsigned x = (unsigned)(kp_m0 + kp_mm);
        const int i = (int)(kp_k0 + kp_kk);
        kp_As[kp_kk][kp_mm] = (x < M && i < M) ? (float)(a[x * M + i]) : (float)0;
      }
      for (int kp_e = kp_tid; kp_e < 16 * 64; kp_e += kp_nt) {
        const int kp_kk = kp_e / 64, kp_nn = kp_e % 64;
        const unsigned y = (unsigned)(kp_n0 + kp_nn);
        const int i = (int)(kp_k0 + kp_kk);
        kp_Bs[kp_kk][kp_nn] = (y < M && i < M) ? (float)(b[i * M + y]) : (float)0;
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
        const unsigned x = (unsigned)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const unsigned y = (unsigned)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
        if (!(x < M && y < M)) continue;
        float tmp = 0.0f;
        tmp = kp_acc[kp_a][kp_b];
        c[x * M + y] = tmp;
      }
    }
    }
  }
}
