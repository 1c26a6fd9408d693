// task: 100_HingeLoss
// class: scalar-reduction
// KernelBench level 1 #100: torch.mean(torch.clamp(1 - p * t, min=0)) with t broadcast along the
// rows, p of (32768, 32768) in v0.1; here 2048 rows of the same length (256 MiB). KernelBench's
// targets are -1 or +1; here uniform in [-1, 1] (the spec has no two-value fill; same work).
// torch: out = torch.mean(torch.clamp(1 - p.view(ROWS, COLS) * t.view(1, COLS), min=0)).reshape(1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = 132 * 2
// kernelpro: block = 512
// kernelpro: out = inout double[1] zeros
// kernelpro: p = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: t = in float[COLS] uniform(-1, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void hinge_loss(double* out, const float* p, const float* t, int rows, int cols) {
  // grid-stride sum, warp shuffles, one atomic per block (kernelpro).
  size_t n = (size_t)rows * cols;
  double kp_acc = 0;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const size_t i = (size_t)(kp_u);
    float v = fmaxf(1.0f - p[i] * t[i % cols], 0.0f);
    kp_acc += (double)v / (double)n;
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
