// Softmax as a template over the element type: grid-stride over rows, long indices.
// class: row-reduction
// torch: y = torch.softmax(x.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 4096
// kernelpro: let COLS = 4096
// kernelpro: instantiate = softmax_naive<float>
// kernelpro: grid = min(ceil_div(ROWS, 16), 132 * 8)
// kernelpro: block = 512
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(-4, 4)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-6
template <typename T>
__global__ void softmax_naive(T* y, const T* x, long rows, long cols) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
    const long r = (long)(kp_u);
    T m = x[r * cols];
    for (long c = 1 + kp_lane; c < cols; c += 32) m = max(m, x[r * cols + c]);
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, kp_o));
    T s = 0;
    if (kp_lane != 0) s = 0;
    for (long c = 0 + kp_lane; c < cols; c += 32) {
      T e = exp(x[r * cols + c] - m);
      y[r * cols + c] = e;
      s += e;
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, kp_o);
    __syncwarp();
    for (long c = 0 + kp_lane; c < cols; c += 32) y[r * cols + c] /= s;
    __syncwarp();
  }
}
