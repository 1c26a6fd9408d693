// Transpose with a 1D launch: each thread splits its flat index with / and %.
// class: transpose
// torch: dst = src.view(ROWS, COLS).t().contiguous().reshape(-1)
// kernelpro: let ROWS = 4096
// kernelpro: let COLS = 3072
// kernelpro: grid = ceil_div((ROWS) * (COLS), 1024)
// kernelpro: block = 256
// kernelpro: dst = out float[ROWS * COLS]
// kernelpro: src = in float[ROWS * COLS] uniform(-1, 1)
// kernelpro: R = ROWS
// kernelpro: C = COLS
__global__ void transpose_flat(float* dst, const float* src, int R, int C) {
  // 32x32 tiles through shared memory padded to 33 columns (kernelpro TiledTranspose).
  __shared__ float kp_tile[32][33];
  const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_threads = (int)(blockDim.x * blockDim.y * blockDim.z);
  const long long kp_tiles_j = ((long long)(C) + 31) / 32;
  const long long kp_tiles = ((long long)(R) + 31) / 32 * kp_tiles_j;
  for (long long kp_t = (long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z); kp_t < kp_tiles; kp_t += (long long)gridDim.x * gridDim.y * gridDim.z) {
    const long long kp_i0 = kp_t / kp_tiles_j * 32, kp_j0 = kp_t % kp_tiles_j * 32;
    for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {
      const int kp_r = kp_e / 32, kp_c = kp_e % 32;
      const int r = (int)(kp_i0 + kp_r);
      const int c = (int)(kp_j0 + kp_c);
      if (r < R && c < C) kp_tile[kp_r][kp_c] = src[(r * (C) + c)];
    }
    __syncthreads();
    for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {
      const int kp_r = kp_e % 32, kp_c = kp_e / 32;
      const int r = (int)(kp_i0 + kp_r);
      const int c = (int)(kp_j0 + kp_c);
      if (r < R && c < C) {
        dst[c * R + r] = kp_tile[kp_r][kp_c];
      }
    }
    __syncthreads();
  }
}
