// RMSNorm, first version: one thread per row through row pointers, long row offset.
// class: row-reduction
// torch: y = (x.view(N, D) * torch.rsqrt(x.view(N, D).pow(2).mean(dim=1, keepdim=True) + 1e-6) * w).reshape(-1)
// kernelpro: let N = 8192
// kernelpro: let D = 1024
// kernelpro: grid = min(ceil_div(N, 4), 132 * 32)
// kernelpro: block = 128
// kernelpro: y = out float[N * D]
// kernelpro: x = in float[N * D] uniform(-1, 1)
// kernelpro: w = in float[D] uniform(-1, 1)
// kernelpro: rows = N
// kernelpro: dim = D
// kernelpro: check rtol=1e-4 atol=1e-5
__global__ void rmsnorm_fwd(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ w, int rows, int dim) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
    const long row = (long)(kp_u);
    const float* xr = x + row * dim;
    float* yr = y + row * dim;
    float ss = 0.0f;
    if (kp_lane != 0) ss = 0;
    for (int j = 0 + kp_lane; j < dim; j += 32) ss += xr[j] * xr[j];
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, kp_o);
    float inv = rsqrtf(ss / dim + 1e-6f);
    for (int j = 0 + kp_lane; j < dim; j += 32) yr[j] = xr[j] * inv * w[j];
    __syncwarp();
  }
}
