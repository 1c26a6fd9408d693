// task: 93_masked_cumsum
// class: scan
// KernelBench level 1 #93: torch.cumsum(x * mask, dim=1) with a random boolean mask, x of
// (32768, 32768) in v0.1; here 2048 rows of the same length (256 MiB; the mask as bytes).
// A grid-stride loop over rows; each row adds only its masked elements.
// torch: y = torch.cumsum(x.view(ROWS, COLS) * mask.view(ROWS, COLS).float(), dim=1).reshape(-1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = min(ceil_div(ROWS, 4), 132 * 32)
// kernelpro: block = 128
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: mask = in uint8[ROWS * COLS] randint(0, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void masked_cumsum_rows(float* y, const float* x, const unsigned char* mask, int rows, int cols) {
  // One warp per unit; lanes scan its elements 32 at a time with shuffles (kernelpro WarpScan).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
    const int r = (int)(kp_u);
    float acc = 0.0f;
    for (int kp_c0 = 0; kp_c0 < (cols); kp_c0 += 32) {
      const int c = kp_c0 + kp_lane;
      const bool kp_in = c < (cols);
      size_t at = (size_t)r * cols + c;
      decltype(acc) kp_e = 0;
      if (kp_in) { kp_e = (mask[at]) ? (x[at]) : (0); }
      // Inclusive scan of the 32 elements across the lanes.
      for (int kp_o = 1; kp_o < 32; kp_o <<= 1) {
        const decltype(kp_e) kp_t = __shfl_up_sync(0xffffffffu, kp_e, kp_o);
        if (kp_lane >= kp_o) kp_e = kp_e + kp_t;
      }
      {
        const decltype(acc) kp_acc = acc + kp_e;
        if (kp_in) y[at] = kp_acc;
      }
      // The chunk's total (lane 31's inclusive value) carries on.
      acc = acc + __shfl_sync(0xffffffffu, kp_e, 31);
    }
  }
}
