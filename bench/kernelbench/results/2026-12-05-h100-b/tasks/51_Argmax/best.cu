// task: 51_Argmax_over_a_dimension
// class: row-reduction
// KernelBench level 1 #51: torch.argmax(x, dim=1) (int64), x of (128, 4096, 4095) in v0.1; here
// batch 4 (256 MiB). One thread per output; the first maximum wins, as in PyTorch.
// torch: idx = torch.argmax(x.view(B, D1, D2), dim=1).reshape(-1)
// kernelpro: let B = 4
// kernelpro: let D1 = 4096
// kernelpro: let D2 = 4095
// kernelpro: grid = min(ceil_div((B) * (D2), 16), 132 * 8)
// kernelpro: block = 512
// kernelpro: idx = out int64[B * D2]
// kernelpro: x = in float[B * D1 * D2] uniform(0, 1)
// kernelpro: batch = B
// kernelpro: reduce = D1
// kernelpro: inner = D2
__global__ void argmax_dim1(long long* idx, const float* x, int batch, int reduce, int inner) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(batch) * (long long)(inner); kp_u += kp_warps) {
    const int k = (int)(kp_u % (inner));
    const int b = (int)((kp_u / ((long long)(inner))));
    float best = -INFINITY;
    long long at = 0;
    for (int j = 0 + kp_lane; j < reduce; j += 32) {
      float v = __ldg(&x[((size_t)b * reduce + j) * inner + k]);
      if (v > best) {
        best = v;
        at = j;
      }
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_t = __shfl_xor_sync(0xffffffffu, best, kp_o); const auto kp_j = __shfl_xor_sync(0xffffffffu, at, kp_o); if (kp_t > best || (kp_t == best && kp_j < at)) { best = kp_t; at = kp_j; } }
    if (kp_lane == 0) {
      idx[(b * (inner) + k)] = at;
    }
    __syncwarp();
  }
}
