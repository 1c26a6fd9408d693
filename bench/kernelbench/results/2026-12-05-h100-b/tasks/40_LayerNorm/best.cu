// task: 40_LayerNorm
// class: row-reduction
// KernelBench level 1 #40: nn.LayerNorm((64, 256, 256)) on x of (16, 64, 256, 256), as in v0.1.
// The affine weight and bias are random here (KernelBench starts them at ones and zeros), so a
// kernel that ignores them fails. One thread per row of 4M elements, double sums.
// torch: y = F.layer_norm(x.view(ROWS, D), (D,), w, b, 1e-5).reshape(-1)
// kernelpro: let ROWS = 16
// kernelpro: let D = 64 * 256 * 256
// kernelpro: grid = min(ceil_div(ROWS, 1), 132 * 4)
// kernelpro: block = 512
// kernelpro: y = out float[ROWS * D]
// kernelpro: x = in float[ROWS * D] uniform(0, 1)
// kernelpro: w = in float[D] uniform(0.5, 1.5)
// kernelpro: b = in float[D] uniform(-0.5, 0.5)
// kernelpro: rows = ROWS
// kernelpro: d = D
// kernelpro: eps = 1e-5
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void layer_norm_rows(float* y, const float* x, const float* w, const float* b, int rows, int d, float eps) {
  // One block per unit; its threads split the unit's loops, warps combined through shared memory (kernelpro BlockUnits).
  const int kp_lane = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_team = (int)(blockDim.x * blockDim.y * blockDim.z);
  const int kp_nw = kp_team >> 5;
  for (long long kp_u = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_u < (long long)(rows); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z)) {
    const int r = (int)(kp_u);
    const float* xr = x + (size_t)r * d;
    float* yr = y + (size_t)r * d;
    float sum = 0.0f;
    if (kp_lane != 0) sum = 0;
    #pragma unroll 4
    for (int i = 0 + kp_lane; i < d; i += kp_team) sum += xr[i];
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, kp_o);
    { __shared__ decltype(sum) kp_x[32]; if ((kp_lane & 31) == 0) kp_x[kp_lane >> 5] = sum; __syncthreads(); sum = kp_x[0]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) sum += kp_x[kp_w]; __syncthreads(); }
    float mean = (float)(sum / d);
    float sq = 0.0f;
    if (kp_lane != 0) sq = 0;
    #pragma unroll 4
    for (int i = 0 + kp_lane; i < d; i += kp_team) {
      float t = xr[i] - mean;
      sq += (float)t * t;
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, kp_o);
    { __shared__ decltype(sq) kp_x[32]; if ((kp_lane & 31) == 0) kp_x[kp_lane >> 5] = sq; __syncthreads(); sq = kp_x[0]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) sq += kp_x[kp_w]; __syncthreads(); }
    float rstd = (float)(1.0f / sqrt(sq / d + eps));
    #pragma unroll 4
    for (int i = 0 + kp_lane; i < d; i += kp_team) yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
    __syncthreads();
  }
}
