// Scaled copy, first version: one thread per row walks the columns.
// class: map
// torch: dst = src * alpha
// kernelpro: let ROWS = 8192
// kernelpro: let COLS = 2048
// kernelpro: grid = min(ceil_div(ROWS, 8), 132 * 16)
// kernelpro: block = 256
// kernelpro: dst = out float[ROWS * COLS]
// kernelpro: src = in float[ROWS * COLS] uniform(-1, 1)
// kernelpro: alpha = 0.5
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
__global__ void scale_rows(float* __restrict__ dst, const float* __restrict__ src, float alpha, int rows, int cols) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
    const int r = (int)(kp_u);
    for (int c = 0 + kp_lane; c < cols; c += 32) {
      dst[r * cols + c] = alpha * src[r * cols + c]; // expect: UncoalescedAccess|RowWalk
    }
    __syncwarp();
  }
}
