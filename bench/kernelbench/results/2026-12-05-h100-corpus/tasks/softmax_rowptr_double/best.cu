// Softmax, first version: one thread per row through row pointers, with a double sum.
// class: row-reduction
// torch: out = torch.softmax(inp.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 4096
// kernelpro: let COLS = 4096
// kernelpro: grid = min(ceil_div(ROWS, 8), 132 * 16)
// kernelpro: block = 256
// kernelpro: out = out float[ROWS * COLS]
// kernelpro: inp = in float[ROWS * COLS] uniform(-4, 4)
// kernelpro: N = ROWS
// kernelpro: C = COLS
// kernelpro: check rtol=1e-4 atol=1e-6
__global__ void softmax_forward_v1(float* out, const float* inp, int N, int C) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(N); kp_u += kp_warps) {
    const int i = (int)(kp_u);
    const float* inp_row = inp + i * C;
    float* out_row = out + i * C;
    float maxval = -INFINITY;
    for (int j = 0 + kp_lane; j < C; j += 32) {
      if (inp_row[j] > maxval) { // expect: UncoalescedAccess|RowWalk
        maxval = inp_row[j];
      }
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_t = __shfl_xor_sync(0xffffffffu, maxval, kp_o); if (kp_t > maxval) maxval = kp_t; }
    double sum = 0.0;
    if (kp_lane != 0) sum = 0;
    for (int j = 0 + kp_lane; j < C; j += 32) {
      out_row[j] = expf(inp_row[j] - maxval);
      sum += out_row[j];
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, kp_o);
    __syncwarp();
    for (int j = 0 + kp_lane; j < C; j += 32) {
      out_row[j] /= (float)sum;
    }
    __syncwarp();
  }
}
