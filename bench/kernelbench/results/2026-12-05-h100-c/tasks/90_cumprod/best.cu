// task: 90_cumprod
// class: scan
// KernelBench level 1 #90: torch.cumprod(x, dim=1), x of (32768, 32768) in v0.1; here 2048 rows of
// the same length (256 MiB), values near 1 so the products stay finite. One thread per row
// multiplies along it through row pointers.
// torch: y = torch.cumprod(x.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = min(ceil_div(ROWS, 8), 132 * 16)
// kernelpro: block = 256
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0.999, 1.001)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-3 atol=1e-5
__global__ void cumprod_rows(float* y, const float* x, long rows, long cols) {
  // One warp per unit; lanes scan its elements 32 at a time with shuffles (kernelpro WarpScan).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
    const long r = (long)(kp_u);
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float p = 1.0f;
    for (long kp_c0 = 0; kp_c0 < (cols); kp_c0 += 32) {
      const long c = kp_c0 + kp_lane;
      const bool kp_in = c < (cols);
      decltype(p) kp_e = 1;
      if (kp_in) { kp_e = xr[c]; }
      // Inclusive scan of the 32 elements across the lanes.
      for (int kp_o = 1; kp_o < 32; kp_o <<= 1) {
        const decltype(kp_e) kp_t = __shfl_up_sync(0xffffffffu, kp_e, kp_o);
        if (kp_lane >= kp_o) kp_e = kp_e * kp_t;
      }
      {
        const decltype(p) kp_acc = p * kp_e;
        if (kp_in) yr[c] = kp_acc;
      }
      // The chunk's total (lane 31's inclusive value) carries on.
      p = p * __shfl_sync(0xffffffffu, kp_e, 31);
    }
  }
}
