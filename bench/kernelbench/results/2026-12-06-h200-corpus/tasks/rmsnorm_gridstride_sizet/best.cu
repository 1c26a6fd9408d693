// RMSNorm with a grid-stride loop over rows, size_t indices and index arithmetic.
// class: row-reduction
// torch: out = (inp.view(N, D) * torch.rsqrt(inp.view(N, D).pow(2).mean(dim=1, keepdim=True) + 1e-6) * scale).reshape(-1)
// kernelpro: let N = 8192
// kernelpro: let D = 1024
// kernelpro: grid = min(ceil_div(N, 4), 132 * 32)
// kernelpro: block = 128
// kernelpro: out = out float[N * D]
// kernelpro: inp = in float[N * D] uniform(-1, 1)
// kernelpro: scale = in float[D] uniform(-1, 1)
// kernelpro: n_rows = N
// kernelpro: n_cols = D
// kernelpro: check rtol=1e-4 atol=1e-5
__global__ void rms_norm_kernel(float* out, const float* inp, const float* scale, size_t n_rows, size_t n_cols) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(n_rows); kp_u += kp_warps) {
    const size_t r = (size_t)(kp_u);
    float acc = 0.f;
    if (kp_lane != 0) acc = 0;
    for (size_t c = 0 + kp_lane; c < n_cols; c += 32) {
      float v = inp[r * n_cols + c]; // expect: UncoalescedAccess|RowWalk
      acc += v * v;
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, kp_o);
    float r_rms = 1.0f / sqrtf(acc / (float)n_cols + 1e-6f);
    for (size_t c = 0 + kp_lane; c < n_cols; c += 32) out[r * n_cols + c] = inp[r * n_cols + c] * r_rms * scale[c];
    __syncwarp();
  }
}
