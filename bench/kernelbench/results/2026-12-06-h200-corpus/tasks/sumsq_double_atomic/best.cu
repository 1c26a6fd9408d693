// Sum of squares into a double with a double atomic per element (one address).
// class: scalar-reduction
// torch: acc = acc + (v.double() ** 2).sum()
// kernelpro: let N = 1 << 22
// kernelpro: grid = min(ceil_div(N, 512), 132 * 2)
// kernelpro: block = 512
// kernelpro: acc = inout double[1] zeros
// kernelpro: v = in float[N] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-6 atol=1e-6
__global__ void sumsq(double* acc, const float* v, unsigned n) {
  // grid-stride sum, warp shuffles, one atomic per block (kernelpro).
  double kp_acc = 0;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const unsigned i = (unsigned)(kp_u);
    double t = (double)v[i] * v[i];
    kp_acc += t;
  }
  __shared__ double kp_part[32];
  const unsigned kp_tid = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_acc += __shfl_down_sync(0xffffffffu, kp_acc, kp_o);
  if ((kp_tid & 31u) == 0) kp_part[kp_tid >> 5] = kp_acc;
  __syncthreads();
  if (kp_tid < 32u) {
    double kp_v = kp_tid < (blockDim.x * blockDim.y * blockDim.z) / 32u ? kp_part[kp_tid] : (double)0;
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
    if (kp_tid == 0) atomicAdd(acc, kp_v);
  }
}
