// task: 24_LogSoftmax
// class: row-reduction
// KernelBench level 1 #24: torch.log_softmax(x, dim=1), x of (4096, 393216) in v0.1; here 128 rows
// of the same length (192 MiB). One thread per row, index arithmetic instead of row pointers.
// torch: y = torch.log_softmax(x.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 128
// kernelpro: let COLS = 393216
// kernelpro: grid = min(ceil_div(ROWS, 1), 132 * 4)
// kernelpro: block = 512
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void log_softmax_rows(float* y, const float* x, long rows, long cols) {
  // One block per unit; its threads split the unit's loops, warps combined through shared memory (kernelpro BlockUnits).
  const int kp_lane = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_team = (int)(blockDim.x * blockDim.y * blockDim.z);
  const int kp_nw = kp_team >> 5;
  for (long long kp_u = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_u < (long long)(rows); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z)) {
    const long r = (long)(kp_u);
    float m = -INFINITY;
    float s = 0.0f;
    if (kp_lane != 0) s = 0;
    #pragma unroll 4
    for (long c = 0 + kp_lane; c < cols; c += kp_team) {
      const auto kp_m0 = m;
      m = fmaxf(m, x[r * cols + c]);
      if (m != kp_m0 && s != 0) s *= expf(kp_m0 - m);
      s += expf((float)(x[r * cols + c] - m));
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_om = __shfl_xor_sync(0xffffffffu, m, kp_o); const auto kp_os = __shfl_xor_sync(0xffffffffu, s, kp_o); const auto kp_nm = fmaxf(m, kp_om); s = (s != 0 ? s * expf(m - kp_nm) : s) + (kp_os != 0 ? kp_os * expf(kp_om - kp_nm) : kp_os); m = kp_nm; }
    { __shared__ decltype(m) kp_x[32]; __shared__ decltype(s) kp_y[32]; if ((kp_lane & 31) == 0) { kp_x[kp_lane >> 5] = m; kp_y[kp_lane >> 5] = s; } __syncthreads(); m = kp_x[0]; s = kp_y[0]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) { const auto kp_om = kp_x[kp_w]; const auto kp_os = kp_y[kp_w]; const auto kp_nm = fmaxf(m, kp_om); s = (s != 0 ? s * expf(m - kp_nm) : s) + (kp_os != 0 ? kp_os * expf(kp_om - kp_nm) : kp_os); m = kp_nm; } __syncthreads(); }
    float lse = m + (float)logf(s);
    #pragma unroll 4
    for (long c = 0 + kp_lane; c < cols; c += kp_team) y[r * cols + c] = x[r * cols + c] - lse;
    __syncthreads();
  }
}
