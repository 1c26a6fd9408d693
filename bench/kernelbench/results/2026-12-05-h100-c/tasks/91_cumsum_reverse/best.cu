// task: 91_cumsum_reverse
// class: scan
// KernelBench level 1 #91: torch.cumsum(x.flip(1), 1).flip(1), x of (32768, 32768) in v0.1; here
// 2048 rows of the same length (256 MiB). One thread per row sums from its end down.
// torch: y = torch.cumsum(x.view(ROWS, COLS).flip(1), dim=1).flip(1).reshape(-1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = min(ceil_div(ROWS, 4), 132 * 32)
// kernelpro: block = 128
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void reverse_cumsum_rows(float* y, const float* x, int rows, int cols) {
  // One warp per unit; lanes scan its elements 32 at a time with shuffles (kernelpro WarpScan).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
    const int r = (int)(kp_u);
    float acc = 0.0f;
    for (int kp_c0 = cols - 1; kp_c0 >= (0); kp_c0 -= 32) {
      const int c = kp_c0 - kp_lane;
      const bool kp_in = c >= (0);
      decltype(acc) kp_e = 0;
      if (kp_in) { kp_e = x[(size_t)r * cols + c]; }
      // Inclusive scan of the 32 elements across the lanes.
      for (int kp_o = 1; kp_o < 32; kp_o <<= 1) {
        const decltype(kp_e) kp_t = __shfl_up_sync(0xffffffffu, kp_e, kp_o);
        if (kp_lane >= kp_o) kp_e = kp_e + kp_t;
      }
      {
        const decltype(acc) kp_acc = acc + kp_e;
        if (kp_in) y[(size_t)r * cols + c] = kp_acc;
      }
      // The chunk's total (lane 31's inclusive value) carries on.
      acc = acc + __shfl_sync(0xffffffffu, kp_e, 31);
    }
  }
}
