// RMSNorm as a template with an element macro, launched 2D with the row on threadIdx.y (block 1 x 128).
// class: row-reduction
// torch: y = (x.view(N, D) * torch.rsqrt(x.view(N, D).pow(2).mean(dim=1, keepdim=True) + 1e-6) * g).reshape(-1)
#define AT(p, r, c) p[(r) * d + (c)]
// kernelpro: let N = 8192
// kernelpro: let D = 1024
// kernelpro: instantiate = rms_norm<float>
// kernelpro: grid = min(ceil_div(N, 4), 132 * 32)
// kernelpro: block = 128
// kernelpro: y = out float[N * D]
// kernelpro: x = in float[N * D] uniform(-1, 1)
// kernelpro: g = in float[D] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: d = D
// kernelpro: check rtol=1e-4 atol=1e-5
template <typename T>
__global__ void rms_norm(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ g, int n, int d) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(n); kp_u += kp_warps) {
    const int r = (int)(kp_u);
    T sq = 0;
    if (kp_lane != 0) sq = 0;
    for (int c = 0 + kp_lane; c < d; c += 32) sq += AT(x, r, c) * AT(x, r, c);
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, kp_o);
    T inv = rsqrtf(sq / d + (T)1e-6f);
    for (int c = 0 + kp_lane; c < d; c += 32) AT(y, r, c) = AT(x, r, c) * inv * g[c];
    __syncwarp();
  }
}
