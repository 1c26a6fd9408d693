// Transpose with access macros and the row index on x (2D launch): reads are strided, writes coalesced.
// class: transpose
// torch: b = a.view(ROWS, COLS).t().contiguous().reshape(-1)
#define IN(r, c) a[(long)(r) * ncols + (c)]
#define OUT(r, c) b[(long)(r) * nrows + (c)]
// kernelpro: let ROWS = 4096
// kernelpro: let COLS = 3072
// kernelpro: grid = (ceil_div(ROWS, 32), ceil_div(COLS, 8))
// kernelpro: block = (32, 8)
// kernelpro: b = out float[ROWS * COLS]
// kernelpro: a = in float[ROWS * COLS] uniform(-1, 1)
// kernelpro: nrows = ROWS
// kernelpro: ncols = COLS
__global__ void transpose_kernel(float* __restrict__ b, const float* __restrict__ a, int nrows, int ncols) {
  // 32x32 tiles through shared memory padded to 33 columns (kernelpro TiledTranspose).
  __shared__ float kp_tile[32][33];
  const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_threads = (int)(blockDim.x * blockDim.y * blockDim.z);
  const long long kp_tiles_j = ((long long)(nrows) + 31) / 32;
  const long long kp_tiles = ((long long)(ncols) + 31) / 32 * kp_tiles_j;
  for (long long kp_t = (long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z); kp_t < kp_tiles; kp_t += (long long)gridDim.x * gridDim.y * gridDim.z) {
    const long long kp_i0 = kp_t / kp_tiles_j * 32, kp_j0 = kp_t % kp_tiles_j * 32;
    for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {
      const int kp_r = kp_e % 32, kp_c = kp_e / 32;
      const int c = (int)(kp_i0 + kp_r);
      const int r = (int)(kp_j0 + kp_c);
      if (c < ncols && r < nrows) kp_tile[kp_r][kp_c] = a[(long)((r)) * ncols + ((c))];
    }
    __syncthreads();
    for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {
      const int kp_r = kp_e / 32, kp_c = kp_e % 32;
      const int c = (int)(kp_i0 + kp_r);
      const int r = (int)(kp_j0 + kp_c);
      if (c < ncols && r < nrows) {
        b[(long)((c)) * nrows + ((r))] = kp_tile[kp_r][kp_c];
      }
    }
    __syncthreads();
  }
}
