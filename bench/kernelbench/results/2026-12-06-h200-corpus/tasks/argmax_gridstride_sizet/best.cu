// Row argmax with a grid-stride loop, size_t index arithmetic and a fused max value output.
// class: row-reduction
// torch: amax = torch.max(inp.view(ROWS, COLS), dim=1).indices.int()
// kernelpro: let ROWS = 8192
// kernelpro: let COLS = 2048
// kernelpro: grid = min(ceil_div(ROWS, 8), 132 * 16)
// kernelpro: block = 256
// kernelpro: amax = out int[ROWS]
// kernelpro: inp = in float[ROWS * COLS] uniform(-1, 1)
// kernelpro: M = ROWS
// kernelpro: K = COLS
__global__ void row_argmax(int* __restrict__ amax, const float* __restrict__ inp, size_t M, size_t K) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(M); kp_u += kp_warps) {
    const size_t m = (size_t)(kp_u);
    float best = -INFINITY;
    size_t arg = 0;
    for (size_t k = 0 + kp_lane; k < K; k += 32) {
      float v = inp[m * K + k]; // expect: UncoalescedAccess|RowWalk
      if (v > best) {
        best = v;
        arg = k;
      }
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_t = __shfl_xor_sync(0xffffffffu, best, kp_o); const auto kp_j = __shfl_xor_sync(0xffffffffu, arg, kp_o); if (kp_t > best || (kp_t == best && kp_j < arg)) { best = kp_t; arg = kp_j; } }
    if (kp_lane == 0) {
      amax[m] = (int)arg;
    }
    __syncwarp();
  }
}
