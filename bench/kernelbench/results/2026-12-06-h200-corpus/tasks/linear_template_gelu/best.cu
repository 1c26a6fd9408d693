// Linear + GELU as a template: output row on y, output column on x, weight stored (OUT, K), index arithmetic.
// class: contraction
// torch: out = F.gelu(inp.view(ROWS, KD) @ weight.view(NO, KD).t() + bias, approximate='tanh').reshape(-1)
// kernelpro: let ROWS = 4096
// kernelpro: let KD = 768
// kernelpro: let NO = 3072
// kernelpro: instantiate = linear_gelu<float>
// kernelpro: grid = (ceil_div(NO, 32), ceil_div(ROWS, 8))
// kernelpro: block = (32, 8)
// kernelpro: out = out float[ROWS * NO]
// kernelpro: inp = in float[ROWS * KD] uniform(-1, 1)
// kernelpro: weight = in float[NO * KD] uniform(-1, 1)
// kernelpro: bias = in float[NO] uniform(-1, 1)
// kernelpro: batch = ROWS
// kernelpro: in_f = KD
// kernelpro: out_f = NO
// kernelpro: check rtol=1e-4 atol=1e-3
template <typename T>
__global__ void linear_gelu(T* out, const T* inp, const T* weight, const T* bias, int batch, int in_f, int out_f) {
  // SIMT register-tiled contraction (kernelpro TiledContraction): 64x64 tiles, 16 deep, 4x4 outputs a thread, 256 threads a block.
  __shared__ __align__(16) T kp_As[16][64 + 4];
  __shared__ __align__(16) T kp_Bs[16][64 + 4];
  const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_nt = (int)((blockDim.x * blockDim.y * blockDim.z));
  const int kp_tr = kp_tid / 16, kp_tc = kp_tid % 16;
  const long long kp_tiles_n = ((long long)(out_f) + 64 - 1) / 64;
  const long long kp_tiles = ((long long)(batch) + 64 - 1) / 64 * kp_tiles_n;
  const long long kp_blocks = ((long long)gridDim.x * gridDim.y * gridDim.z);
  for (long long kp_t = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_t < kp_tiles; kp_t += kp_blocks) {
    const long long kp_m0 = kp_t / kp_tiles_n * 64, kp_n0 = kp_t % kp_tiles_n * 64;
    T kp_acc[4][4];
    #pragma unroll
    for (int kp_a = 0; kp_a < 4; ++kp_a) {
      #pragma unroll
      for (int kp_b = 0; kp_b < 4; ++kp_b) {
        const int row = (int)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const int col = (int)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
        kp_acc[kp_a][kp_b] = 0;
        if (row < batch && col < out_f) {
        T sum = 0;
        kp_acc[kp_a][kp_b] = sum;
        }
      }
    }
    for (long long kp_k0 = 0; kp_k0 < (long long)(in_f); kp_k0 += 16) {
      #pragma unroll 4
      for (int kp_e = kp_tid; kp_e < 16 * 64; kp_e += kp_nt) {
        const int kp_kk = kp_e % 16, kp_mm = kp_e / 16;
        const int row = (int)(kp_m0 + kp_mm);
        const int k = (int)(kp_k0 + kp_kk);
        kp_As[kp_kk][kp_mm] = (row < batch && k < in_f) ? (T)(inp[row * in_f + k]) : (T)0;
      }
      #pragma unroll 4
      for (int kp_e = kp_tid; kp_e < 16 * 64; kp_e += kp_nt) {
        const int kp_kk = kp_e % 16, kp_nn = kp_e / 16;
        const int col = (int)(kp_n0 + kp_nn);
        const int k = (int)(kp_k0 + kp_kk);
        kp_Bs[kp_kk][kp_nn] = (col < out_f && k < in_f) ? (T)(weight[col * in_f + k]) : (T)0;
      }
      __syncthreads();
      // Threads past the first 256 (a larger block) only help load the tiles.
      if (kp_tid < 256) {
      #pragma unroll
      for (int kp_kk = 0; kp_kk < 16; ++kp_kk) {
        T kp_x[4], kp_y[4];
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
        const int row = (int)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const int col = (int)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
        if (!(row < batch && col < out_f)) continue;
        T sum = 0;
        sum = kp_acc[kp_a][kp_b];
        sum += bias[col];
        out[row * out_f + col] = (T)0.5f * sum * ((T)1.0f + tanhf(0.7978845608f * (sum + 0.044715f * sum * sum * sum)));
      }
    }
    }
  }
}
