// task: 92_cumsum_exclusive
// class: scan
// KernelBench level 1 #92: exclusive cumsum along dim 1 (the corrected form: same shape as x, first
// column 0), x of (32768, 32768) in v0.1; here 2048 rows of the same length (256 MiB).
// torch: y = torch.cat((torch.zeros_like(x.view(ROWS, COLS)[:, :1]), torch.cumsum(x.view(ROWS, COLS)[:, :-1], dim=1)), dim=1).reshape(-1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = min(ceil_div(ROWS, 16), 132 * 8)
// kernelpro: block = 512
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void exclusive_cumsum_rows(float* __restrict__ y, const float* __restrict__ x, int rows, int cols) {
  // One warp per unit; lanes scan its elements 32 at a time with shuffles (kernelpro WarpScan).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
    const int r = (int)(kp_u);
    const float* xr = x + (long)r * cols;
    float* yr = y + (long)r * cols;
    float acc = 0.0f;
    for (int kp_c0 = 0; kp_c0 < (cols); kp_c0 += 32) {
      const int c = kp_c0 + kp_lane;
      const bool kp_in = c < (cols);
      decltype(acc) kp_e = 0;
      if (kp_in) { kp_e = xr[c]; }
      // Inclusive scan of the 32 elements across the lanes.
      #pragma unroll
      for (int kp_o = 1; kp_o < 32; kp_o <<= 1) {
        const decltype(kp_e) kp_t = __shfl_up_sync(0xffffffffu, kp_e, kp_o);
        if (kp_lane >= kp_o) kp_e += kp_t;
      }
      {
        decltype(kp_e) kp_x = __shfl_up_sync(0xffffffffu, kp_e, 1);
        if (kp_lane == 0) kp_x = 0;
        const decltype(acc) kp_acc = acc + kp_x;
        if (kp_in) yr[c] = kp_acc;
      }
      // The chunk's total (lane 31's inclusive value) carries on.
      acc += __shfl_sync(0xffffffffu, kp_e, 31);
    }
  }
}
