// Softmax as a template over the element type: grid-stride over rows, long indices.
// class: row-reduction
// torch: y = torch.softmax(x.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 4096
// kernelpro: let COLS = 4096
// kernelpro: instantiate = softmax_naive<float>
// kernelpro: grid = min(ceil_div(ROWS, 1), 132 * 4)
// kernelpro: block = 512
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(-4, 4)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-6
template <typename T>
__global__ void softmax_naive(T* y, const T* x, long rows, long cols) {
  // One block per unit; its threads split the unit's loops, warps combined through shared memory (kernelpro BlockUnits).
  const int kp_lane = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_team = (int)(blockDim.x * blockDim.y * blockDim.z);
  const int kp_nw = kp_team >> 5;
  for (long long kp_u = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_u < (long long)(rows); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z)) {
    const long r = (long)(kp_u);
    T m = x[r * cols];
    #pragma unroll 4
    for (long c = 1 + kp_lane; c < cols; c += kp_team) m = max(m, x[r * cols + c]);
    #pragma unroll
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, kp_o));
    { __shared__ decltype(m) kp_x[32]; if ((kp_lane & 31) == 0) kp_x[kp_lane >> 5] = m; __syncthreads(); m = kp_x[0]; 
    #pragma unroll 4
    for (int kp_w = 1; kp_w < kp_nw; ++kp_w) m = max(m, kp_x[kp_w]); __syncthreads(); }
    T s = 0;
    if (kp_lane != 0) s = 0;
    #pragma unroll 4
    for (long c = 0 + kp_lane; c < cols; c += kp_team) {
      T e = expf(x[r * cols + c] - m);
      y[r * cols + c] = e;
      s += e;
    }
    #pragma unroll
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, kp_o);
    { __shared__ decltype(s) kp_x[32]; if ((kp_lane & 31) == 0) kp_x[kp_lane >> 5] = s; __syncthreads(); s = kp_x[0]; 
    #pragma unroll 4
    for (int kp_w = 1; kp_w < kp_nw; ++kp_w) s += kp_x[kp_w]; __syncthreads(); }
    __syncthreads();
    #pragma unroll 4
    for (long c = 0 + kp_lane; c < cols; c += kp_team) y[r * cols + c] /= s;
    __syncthreads();
  }
}
