// LayerNorm over a (B, T, C) activation: batch on blockIdx.y, token on x, size_t offsets, one-pass moments.
// class: row-reduction
// torch: out = F.layer_norm(inp.view(BATCH * SEQ, CH), (CH,), gamma, beta, eps=1e-5).reshape(-1)
// kernelpro: let BATCH = 8
// kernelpro: let SEQ = 1024
// kernelpro: let CH = 768
// kernelpro: grid = (min(ceil_div(SEQ, 4), 132 * 32), BATCH)
// kernelpro: block = 128
// kernelpro: out = out float[BATCH * SEQ * CH]
// kernelpro: inp = in float[BATCH * SEQ * CH] uniform(-1, 1)
// kernelpro: gamma = in float[CH] uniform(-1, 1)
// kernelpro: beta = in float[CH] uniform(-1, 1)
// kernelpro: T = SEQ
// kernelpro: C = CH
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void ln_fwd_btc(float* __restrict__ out, const float* __restrict__ inp, const float* __restrict__ gamma, const float* __restrict__ beta, int T, int C) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int bidx = (int)blockIdx.y;
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * (blockDim.x * blockDim.y * blockDim.z)) >> 5;
  for (long long kp_u = ((long long)blockIdx.x * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(T); kp_u += kp_warps) {
    const int t = (int)(kp_u);
    size_t base = ((size_t)bidx * T + t) * C;
    float sum = 0.f, sumsq = 0.f;
    if (kp_lane != 0) sum = 0;
    if (kp_lane != 0) sumsq = 0;
    for (int c = 0 + kp_lane; c < C; c += 32) {
      float v = inp[base + c]; // expect: UncoalescedAccess|RowWalk
      sum += v;
      sumsq += v * v;
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, kp_o);
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sumsq += __shfl_xor_sync(0xffffffffu, sumsq, kp_o);
    float mu = sum / C;
    float var = sumsq / C - mu * mu;
    float inv = rsqrtf(var + 1e-5f);
    for (int c = 0 + kp_lane; c < C; c += 32) {
      out[base + c] = (inp[base + c] - mu) * inv * gamma[c] + beta[c];
    }
    __syncwarp();
  }
}
