// task: 94_MSELoss
// class: scalar-reduction
// KernelBench level 1 #94: torch.mean((p - t) ** 2), p and t of (32768, 32768) in v0.1; here 2048
// rows of the same length (2 x 256 MiB). One thread per element adds its term to one double
// accumulator (a float one loses the small terms at this size); the result is kept in double.
// torch: out = torch.mean((p - t) ** 2).reshape(1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = min(ceil_div((ROWS * COLS), 512), 132 * 2)
// kernelpro: block = 512
// kernelpro: out = inout double[1] zeros
// kernelpro: p = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: t = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: n = ROWS * COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void mse_loss(double* out, const float* p, const float* t, int n) {
  // grid-stride sum, warp shuffles, one atomic per block (kernelpro).
  double kp_acc = 0;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int i = (int)(kp_u);
    float d = p[i] - t[i];
    kp_acc += (double)(d * d) / n;
  }
  __shared__ double kp_part[32];
  const unsigned kp_tid = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_acc += __shfl_down_sync(0xffffffffu, kp_acc, kp_o);
  if ((kp_tid & 31u) == 0) kp_part[kp_tid >> 5] = kp_acc;
  __syncthreads();
  if (kp_tid < 32u) {
    double kp_v = kp_tid < (blockDim.x * blockDim.y * blockDim.z) / 32u ? kp_part[kp_tid] : (double)0;
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
    if (kp_tid == 0) atomicAdd(out, kp_v);
  }
}
