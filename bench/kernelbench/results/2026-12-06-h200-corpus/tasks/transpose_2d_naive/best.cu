// Transpose, first version: 2D launch, column on x; reads are coalesced, writes land ROWS floats apart.
// class: transpose
// torch: out = inp.view(ROWS, COLS).t().contiguous().reshape(-1)
// kernelpro: let ROWS = 4096
// kernelpro: let COLS = 3072
// kernelpro: grid = ceil_div((COLS) * (ROWS), 1024)
// kernelpro: block = 256
// kernelpro: out = out float[ROWS * COLS]
// kernelpro: inp = in float[ROWS * COLS] uniform(-1, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
__global__ void transpose_v1(float* out, const float* inp, int rows, int cols) {
  // 32x32 tiles through shared memory padded to 33 columns (kernelpro TiledTranspose).
  __shared__ float kp_tile[32][33];
  const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_threads = (int)(blockDim.x * blockDim.y * blockDim.z);
  const long long kp_tiles_j = ((long long)(rows) + 31) / 32;
  const long long kp_tiles = ((long long)(cols) + 31) / 32 * kp_tiles_j;
  for (long long kp_t = (long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z); kp_t < kp_tiles; kp_t += (long long)gridDim.x * gridDim.y * gridDim.z) {
    const long long kp_i0 = kp_t / kp_tiles_j * 32, kp_j0 = kp_t % kp_tiles_j * 32;
    for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {
      const int kp_r = kp_e % 32, kp_c = kp_e / 32;
      const int col = (int)(kp_i0 + kp_r);
      const int row = (int)(kp_j0 + kp_c);
      if (col < cols && row < rows) kp_tile[kp_r][kp_c] = inp[row * cols + col];
    }
    __syncthreads();
    for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {
      const int kp_r = kp_e / 32, kp_c = kp_e % 32;
      const int col = (int)(kp_i0 + kp_r);
      const int row = (int)(kp_j0 + kp_c);
      if (col < cols && row < rows) {
        out[col * rows + row] = kp_tile[kp_r][kp_c];
      }
    }
    __syncthreads();
  }
}
