// LayerNorm, first version: one thread per row, three passes over the row through a row pointer.
// class: row-reduction
// torch: y = F.layer_norm(x.view(N, CH), (CH,), w, b, eps=1e-5).reshape(-1)
// kernelpro: let N = 8192
// kernelpro: let CH = 768
// kernelpro: grid = min(ceil_div(N, 8), 132 * 16)
// kernelpro: block = 256
// kernelpro: y = out float[N * CH]
// kernelpro: x = in float[N * CH] uniform(-1, 1)
// kernelpro: w = in float[CH] uniform(-1, 1)
// kernelpro: b = in float[CH] uniform(-1, 1)
// kernelpro: rows = N
// kernelpro: cols = CH
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void layernorm_forward_v1(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b, int rows, int cols) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
    const int row = (int)(kp_u);
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    float mean = 0.0f;
    if (kp_lane != 0) mean = 0;
    for (int i = 0 + kp_lane; i < cols; i += 32) {
      mean += xr[i]; // expect: UncoalescedAccess|RowWalk
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) mean += __shfl_xor_sync(0xffffffffu, mean, kp_o);
    mean = mean / cols;
    float var = 0.0f;
    if (kp_lane != 0) var = 0;
    for (int i = 0 + kp_lane; i < cols; i += 32) {
      float d = xr[i] - mean;
      var += d * d;
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) var += __shfl_xor_sync(0xffffffffu, var, kp_o);
    var = var / cols;
    float rstd = 1.0f / sqrtf(var + 1e-5f);
    for (int i = 0 + kp_lane; i < cols; i += 32) {
      yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
    }
    __syncwarp();
  }
}
