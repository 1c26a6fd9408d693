// Softmax, first version: one thread per row through row pointers, with a double sum.
// class: row-reduction
// torch: out = torch.softmax(inp.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 4096
// kernelpro: let COLS = 4096
// kernelpro: grid = min(ceil_div(ROWS, 1), 132 * 4)
// kernelpro: block = 512
// kernelpro: out = out float[ROWS * COLS]
// kernelpro: inp = in float[ROWS * COLS] uniform(-4, 4)
// kernelpro: N = ROWS
// kernelpro: C = COLS
// kernelpro: check rtol=1e-4 atol=1e-6
__global__ void softmax_forward_v1(float* __restrict__ out, const float* __restrict__ inp, int N, int C) {
  // One block per unit; its threads split the unit's loops, warps combined through shared memory (kernelpro BlockUnits).
  const int kp_lane = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_team = (int)(blockDim.x * blockDim.y * blockDim.z);
  const int kp_nw = kp_team >> 5;
  for (long long kp_u = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_u < (long long)(N); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z)) {
    const int i = (int)(kp_u);
    const float* inp_row = inp + i * C;
    float* out_row = out + i * C;
    float maxval = -INFINITY;
    #pragma unroll 4
    for (int j = 0 + kp_lane; j < C; j += kp_team) {
      if (inp_row[j] > maxval) { // expect: UncoalescedAccess|RowWalk
        maxval = inp_row[j];
      }
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_t = __shfl_xor_sync(0xffffffffu, maxval, kp_o); if (kp_t > maxval) maxval = kp_t; }
    { __shared__ decltype(maxval) kp_x[32]; if ((kp_lane & 31) == 0) kp_x[kp_lane >> 5] = maxval; __syncthreads(); maxval = kp_x[0]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) { if (kp_x[kp_w] > maxval) maxval = kp_x[kp_w]; }; __syncthreads(); }
    float sum = 0.0f;
    if (kp_lane != 0) sum = 0;
    #pragma unroll 4
    for (int j = 0 + kp_lane; j < C; j += kp_team) {
      out_row[j] = expf(inp_row[j] - maxval);
      sum += out_row[j];
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, kp_o);
    { __shared__ decltype(sum) kp_x[32]; if ((kp_lane & 31) == 0) kp_x[kp_lane >> 5] = sum; __syncthreads(); sum = kp_x[0]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) sum += kp_x[kp_w]; __syncthreads(); }
    __syncthreads();
    #pragma unroll 4
    for (int j = 0 + kp_lane; j < C; j += kp_team) {
      out_row[j] /= (float)sum;
    }
    __syncthreads();
  }
}
