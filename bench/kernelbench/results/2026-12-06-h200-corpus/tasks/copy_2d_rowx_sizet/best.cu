// Matrix copy with a 2D launch whose x index walks rows (size_t offsets): every warp touches 32 rows.
// class: map
// torch: dst = src.clone()
// kernelpro: let ROWS = 8192
// kernelpro: let COLS = 2048
// kernelpro: grid = min(ceil_div((ROWS) * (COLS), 512), 132 * 4)
// kernelpro: block = 512
// kernelpro: dst = out float[ROWS * COLS]
// kernelpro: src = in float[ROWS * COLS] uniform(-1, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
__global__ void copy2d(float* dst, const float* src, int rows, int cols) {
  // grid-stride over the units (kernelpro).
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(rows) * (long long)(cols); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int col = (int)(kp_u % (cols));
    const int row = (int)((kp_u / ((long long)(cols))));
    size_t off = (size_t)row * cols + col;
    dst[off] = src[off];
  }
}
