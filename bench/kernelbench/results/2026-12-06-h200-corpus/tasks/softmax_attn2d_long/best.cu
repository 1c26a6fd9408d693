// Attention-score softmax over (B*H, T, T): query on x, head on blockIdx.y, long offsets, index arithmetic.
// class: row-reduction
// torch: att = torch.softmax(pre.view(BH, SEQ, SEQ), dim=-1).reshape(-1)
// kernelpro: let BH = 32
// kernelpro: let SEQ = 1024
// kernelpro: grid = (min(ceil_div(SEQ, 4), 132 * 32), BH)
// kernelpro: block = 128
// kernelpro: att = out float[BH * SEQ * SEQ]
// kernelpro: pre = in float[BH * SEQ * SEQ] uniform(-4, 4)
// kernelpro: T = SEQ
// kernelpro: check rtol=1e-4 atol=1e-6
__global__ void attn_softmax(float* att, const float* pre, int T) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const long h = (long)blockIdx.y;
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * (blockDim.x * blockDim.y * blockDim.z)) >> 5;
  for (long long kp_u = ((long long)blockIdx.x * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(T); kp_u += kp_warps) {
    const int q = (int)(kp_u);
    long off = (h * T + q) * T;
    float mx = -1e30f;
    float denom = 0.f;
    if (kp_lane != 0) denom = 0;
    for (int k = 0 + kp_lane; k < T; k += 32) {
      const auto kp_m0 = mx;
      mx = fmaxf(mx, pre[off + k]);
      if (mx != kp_m0 && denom != 0) denom *= __expf(kp_m0 - mx);
      denom += __expf(pre[off + k] - mx);
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_om = __shfl_xor_sync(0xffffffffu, mx, kp_o); const auto kp_os = __shfl_xor_sync(0xffffffffu, denom, kp_o); const auto kp_nm = fmaxf(mx, kp_om); denom = (denom != 0 ? denom * __expf(mx - kp_nm) : denom) + (kp_os != 0 ? kp_os * __expf(kp_om - kp_nm) : kp_os); mx = kp_nm; }
    for (int k = 0 + kp_lane; k < T; k += 32) att[off + k] = __expf(pre[off + k] - mx) / denom;
    __syncwarp();
  }
}
