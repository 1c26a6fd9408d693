// In-place softmax, one thread per row, the flat index kept in a local (`loc`) and unsigned sizes.
// class: row-reduction
// torch: m = torch.softmax(m.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 4096
// kernelpro: let COLS = 4096
// kernelpro: grid = min(ceil_div(ROWS, 16), 132 * 8)
// kernelpro: block = 512
// kernelpro: m = inout float[ROWS * COLS] uniform(-4, 4)
// kernelpro: R = ROWS
// kernelpro: C = COLS
// kernelpro: check rtol=1e-4 atol=1e-6
__global__ void softmax_inplace(float* m, unsigned int R, unsigned int C) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(R); kp_u += kp_warps) {
    const int row = (int)(kp_u);
    float x_max = -INFINITY;
    for (int col = 0 + kp_lane; col < C; col += 32) {
      int loc = row * C + col;
      x_max = max(x_max, m[loc]); // expect: UncoalescedAccess|RowWalk
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) x_max = max(x_max, __shfl_xor_sync(0xffffffffu, x_max, kp_o));
    float norm = 0.0f;
    if (kp_lane != 0) norm = 0;
    for (int col = 0 + kp_lane; col < C; col += 32) {
      int loc = row * C + col;
      m[loc] = expf(m[loc] - x_max);
      norm += m[loc];
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) norm += __shfl_xor_sync(0xffffffffu, norm, kp_o);
    __syncwarp();
    for (int col = 0 + kp_lane; col < C; col += 32) m[row * C + col] /= norm;
    __syncwarp();
  }
}
