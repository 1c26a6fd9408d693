// Square matmul with a 1D launch split by / and %, size_t indices, a macro for the element, and a double accumulator.
// class: contraction
// torch: out = (lhs.view(N, N) @ rhs.view(N, N)).reshape(-1)
#define EL(m, r, c) m[(r) * dim + (c)]
// kernelpro: let N = 2048
// kernelpro: grid = ceil_div(N * N, 256)
// kernelpro: block = 256
// kernelpro: out = out float[N * N]
// kernelpro: lhs = in float[N * N] uniform(-1, 1)
// kernelpro: rhs = in float[N * N] uniform(-1, 1)
// kernelpro: dim = N
// kernelpro: check rtol=1e-4 atol=1e-3
__global__ void matmul_flat(float* out, const float* lhs, const float* rhs, size_t dim) {
  // SIMT register-tiled contraction (kernelpro TiledContraction): 64x64 tiles, 16 deep, 4x4 outputs a thread, 256 threads a block.
  __shared__ __align__(16) float kp_As[16][64 + 4];
  __shared__ __align__(16) float kp_Bs[16][64 + 4];
  const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_nt = (int)((blockDim.x * blockDim.y * blockDim.z));
  const int kp_tr = kp_tid / 16, kp_tc = kp_tid % 16;
  const long long kp_tiles_n = ((long long)(dim) + 64 - 1) / 64;
  const long long kp_tiles = ((long long)(dim) + 64 - 1) / 64 * kp_tiles_n;
  const long long kp_blocks = ((long long)gridDim.x * gridDim.y * gridDim.z);
  for (long long kp_t = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_t < kp_tiles; kp_t += kp_blocks) {
    const long long kp_m0 = kp_t / kp_tiles_n * 64, kp_n0 = kp_t % kp_tiles_n * 64;
    float kp_acc[4][4];
    #pragma unroll
    for (int kp_a = 0; kp_a < 4; ++kp_a) {
      #pragma unroll
      for (int kp_b = 0; kp_b < 4; ++kp_b) {
        const size_t r = (size_t)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const size_t c = (size_t)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
        kp_acc[kp_a][kp_b] = 0;
        if (r < dim && c < dim) {
        float acc = 0.0f;
        kp_acc[kp_a][kp_b] = acc;
        }
      }
    }
    for (long long kp_k0 = 0; kp_k0 < (long long)(dim); kp_k0 += 16) {
      #pragma unroll 4
      for (int kp_e = kp_tid; kp_e < 16 * 64; kp_e += kp_nt) {
        const int kp_kk = kp_e % 16, kp_mm = kp_e / 16;
        const size_t r = (size_t)(kp_m0 + kp_mm);
        const size_t k = (size_t)(kp_k0 + kp_kk);
        kp_As[kp_kk][kp_mm] = (r < dim && k < dim) ? (float)(((lhs)[((r)) * dim + ((k))])) : (float)0;
      }
      #pragma unroll 4
      for (int kp_e = kp_tid; kp_e < 16 * 64; kp_e += kp_nt) {
        const int kp_kk = kp_e / 64, kp_nn = kp_e % 64;
        const size_t c = (size_t)(kp_n0 + kp_nn);
        const size_t k = (size_t)(kp_k0 + kp_kk);
        kp_Bs[kp_kk][kp_nn] = (c < dim && k < dim) ? (float)(((rhs)[((k)) * dim + ((c))])) : (float)0;
      }
      __syncthreads();
      // Threads past the first 256 (a larger block) only help load the tiles.
      if (kp_tid < 256) {
      #pragma unroll
      for (int kp_kk = 0; kp_kk < 16; ++kp_kk) {
        float kp_x[4], kp_y[4];
        #pragma unroll
        for (int kp_a = 0; kp_a < 4; ++kp_a) kp_x[kp_a] = kp_As[kp_kk][(4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2))];
        #pragma unroll
        for (int kp_b = 0; kp_b < 4; ++kp_b) kp_y[kp_b] = kp_Bs[kp_kk][(4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2))];
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
        const size_t r = (size_t)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const size_t c = (size_t)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
        if (!(r < dim && c < dim)) continue;
        float acc = 0.0f;
        acc = kp_acc[kp_a][kp_b];
        out[(r * (dim) + c)] = (float)acc;
      }
    }
    }
  }
}
