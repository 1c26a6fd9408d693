// LayerNorm with an IDX macro, double accumulators and an optional bias.
// class: row-reduction
// torch: output = F.layer_norm(input.view(N, CH), (CH,), weight, bias, eps=1e-5).reshape(-1)
#define IDX(r, c) ((r) * ncols + (c))
// kernelpro: let N = 8192
// kernelpro: let CH = 768
// kernelpro: grid = min(ceil_div(N, 4), 132 * 32)
// kernelpro: block = 128
// kernelpro: output = out float[N * CH]
// kernelpro: input = in float[N * CH] uniform(-1, 1)
// kernelpro: weight = in float[CH] uniform(-1, 1)
// kernelpro: bias = in float[CH] uniform(-1, 1)
// kernelpro: nrows = N
// kernelpro: ncols = CH
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void layer_norm_kernel(float* __restrict__ output, const float* __restrict__ input, const float* __restrict__ weight, float* __restrict__ bias, int nrows, int ncols) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(nrows); kp_u += kp_warps) {
    const int r = (int)(kp_u);
    float sum = 0.0f;
    if (kp_lane != 0) sum = 0;
    for (int c = 0 + kp_lane; c < ncols; c += 32) sum += input[IDX(r, c)];
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, kp_o);
    float mean = sum / ncols;
    float var = 0.0f;
    if (kp_lane != 0) var = 0;
    for (int c = 0 + kp_lane; c < ncols; c += 32) {
      float d = input[IDX(r, c)] - mean;
      var += d * d;
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) var += __shfl_xor_sync(0xffffffffu, var, kp_o);
    var /= ncols;
    float inv = (float)(1.0f / sqrtf(var + 1e-5f));
    for (int c = 0 + kp_lane; c < ncols; c += 32) {
      float v = (input[IDX(r, c)] - (float)mean) * inv;
      output[IDX(r, c)] = v * weight[c] + (bias ? bias[c] : 0.0f);
    }
    __syncwarp();
  }
}
