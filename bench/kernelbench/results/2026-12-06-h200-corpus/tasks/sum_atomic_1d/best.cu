// Global sum, first version: every thread adds its element to out[0] with a float atomic.
// class: scalar-reduction
// torch: out = out + x.sum()
// kernelpro: let N = 1 << 22
// kernelpro: grid = min(ceil_div(N, 512), 132 * 2)
// kernelpro: block = 512
// kernelpro: out = inout float[1] zeros
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-3 atol=0.5
__global__ void sum_atomic(float* out, const float* x, int n) {
  // grid-stride sum, warp shuffles, one atomic per block (kernelpro).
  float kp_acc = 0;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int i = (int)(kp_u);
    kp_acc += x[i];
  }
  __shared__ float kp_part[32];
  const unsigned kp_tid = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_acc += __shfl_down_sync(0xffffffffu, kp_acc, kp_o);
  if ((kp_tid & 31u) == 0) kp_part[kp_tid >> 5] = kp_acc;
  __syncthreads();
  if (kp_tid < 32u) {
    float kp_v = kp_tid < (blockDim.x * blockDim.y * blockDim.z) / 32u ? kp_part[kp_tid] : (float)0;
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
    if (kp_tid == 0) atomicAdd(out, kp_v);
  }
}
