// In-place softmax, one thread per row, the flat index kept in a local (`loc`) and unsigned sizes.
// class: row-reduction
// torch: m = torch.softmax(m.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 4096
// kernelpro: let COLS = 4096
// kernelpro: grid = min(ceil_div(ROWS, 1), 132 * 4)
// kernelpro: block = 512
// kernelpro: m = inout float[ROWS * COLS] uniform(-4, 4)
// kernelpro: R = ROWS
// kernelpro: C = COLS
// kernelpro: check rtol=1e-4 atol=1e-6
__global__ void softmax_inplace(float* m, unsigned int R, unsigned int C) {
  // One block per unit; its threads split the unit's loops, warps combined through shared memory (kernelpro BlockUnits).
  const int kp_lane = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_team = (int)(blockDim.x * blockDim.y * blockDim.z);
  const int kp_nw = kp_team >> 5;
  for (long long kp_u = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_u < (long long)(R); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z)) {
    const int row = (int)(kp_u);
    float x_max = -INFINITY;
    #pragma unroll 4
    for (int col = 0 + kp_lane; col < C; col += kp_team) {
      int loc = row * C + col;
      x_max = max(x_max, m[loc]); // expect: UncoalescedAccess|RowWalk
    }
    #pragma unroll
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) x_max = max(x_max, __shfl_xor_sync(0xffffffffu, x_max, kp_o));
    { __shared__ decltype(x_max) kp_x[32]; if ((kp_lane & 31) == 0) kp_x[kp_lane >> 5] = x_max; __syncthreads(); x_max = kp_x[0]; 
    #pragma unroll 4
    for (int kp_w = 1; kp_w < kp_nw; ++kp_w) x_max = max(x_max, kp_x[kp_w]); __syncthreads(); }
    float norm = 0.0f;
    if (kp_lane != 0) norm = 0;
    #pragma unroll 4
    for (int col = 0 + kp_lane; col < C; col += kp_team) {
      int loc = row * C + col;
      m[loc] = expf(m[loc] - x_max);
      norm += m[loc];
    }
    #pragma unroll
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) norm += __shfl_xor_sync(0xffffffffu, norm, kp_o);
    { __shared__ decltype(norm) kp_x[32]; if ((kp_lane & 31) == 0) kp_x[kp_lane >> 5] = norm; __syncthreads(); norm = kp_x[0]; 
    #pragma unroll 4
    for (int kp_w = 1; kp_w < kp_nw; ++kp_w) norm += kp_x[kp_w]; __syncthreads(); }
    __syncthreads();
    #pragma unroll 4
    for (int col = 0 + kp_lane; col < C; col += kp_team) m[row * C + col] /= norm;
    __syncthreads();
  }
}
