// Cross-entropy loss per row (log-sum-exp minus the target's logit), one thread per row through a row pointer.
// class: row-reduction
// torch: losses = F.cross_entropy(logits.view(NROWS, NV), targets.long(), reduction='none')
// kernelpro: let NROWS = 4096
// kernelpro: let NV = 8192
// kernelpro: grid = min(ceil_div(NROWS, 4), 132 * 32)
// kernelpro: block = 128
// kernelpro: losses = out float[NROWS]
// kernelpro: logits = in float[NROWS * NV] uniform(-4, 4)
// kernelpro: targets = in int[NROWS] randint(0, 8191)
// kernelpro: N = NROWS
// kernelpro: V = NV
// kernelpro: check rtol=1e-4 atol=1e-5
__global__ void crossentropy_forward(float* __restrict__ losses, const float* __restrict__ logits, const int* __restrict__ targets, int N, int V) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(N); kp_u += kp_warps) {
    const int i = (int)(kp_u);
    const float* row = logits + (size_t)i * V;
    float m = row[0];
    for (int v = 1 + kp_lane; v < V; v += 32) m = fmaxf(m, row[v]);
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, kp_o));
    float s = 0.f;
    if (kp_lane != 0) s = 0;
    for (int v = 0 + kp_lane; v < V; v += 32) s += expf(row[v] - m);
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, kp_o);
    if (kp_lane == 0) {
      losses[i] = logf(s) + m - row[targets[i]];
    }
    __syncwarp();
  }
}
