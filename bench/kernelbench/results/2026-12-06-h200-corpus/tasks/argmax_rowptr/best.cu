// Row argmax, first version: one thread per row through a row pointer.
// class: row-reduction
// torch: idx = torch.argmax(x.view(ROWS, COLS), dim=1).int()
// kernelpro: let ROWS = 8192
// kernelpro: let COLS = 2048
// kernelpro: grid = min(ceil_div(ROWS, 4), 132 * 32)
// kernelpro: block = 128
// kernelpro: idx = out int[ROWS]
// kernelpro: x = in float[ROWS * COLS] uniform(-1, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
__global__ void argmax_rows_v1(int* __restrict__ idx, const float* __restrict__ x, int rows, int cols) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
    const int row = (int)(kp_u);
    const float* r = x + row * cols;
    int best = 0;
    float bv = r[0];
    for (int c = 1 + kp_lane; c < cols; c += 32) {
      if (r[c] > bv) { // expect: UncoalescedAccess|RowWalk
        bv = r[c];
        best = c;
      }
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_t = __shfl_xor_sync(0xffffffffu, bv, kp_o); const auto kp_j = __shfl_xor_sync(0xffffffffu, best, kp_o); if (kp_t > bv || (kp_t == bv && kp_j < best)) { bv = kp_t; best = kp_j; } }
    if (kp_lane == 0) {
      idx[row] = best;
    }
    __syncwarp();
  }
}
