// Block sums with interleaved addressing, first version: `tid % (2 * s) == 0` keeps one thread in 2s working.
// class: scalar-reduction
// torch: partial = x.view(-1, BS).sum(dim=1)
// kernelpro: let N = 1 << 24
// kernelpro: let BS = 256
// kernelpro: grid = N / BS
// kernelpro: block = BS
// kernelpro: smem = BS * 4
// kernelpro: partial = out float[N / BS]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-5
__global__ void reduce0(float* partial, const float* x, int n) {
  extern __shared__ float sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  // Warp shuffles, one shared slot per warp, the first warp finishes (kernelpro ShuffleTree).
  // L2 prefetch of what the same thread of the block kp_ahead blocks later (about two waves) loads.
  const int kp_ahead = max(1, (int)__fdividef(524288.0f, (float)(blockDim.x * blockDim.y * blockDim.z)));
  if (blockIdx.x + kp_ahead < gridDim.x && (((i + kp_ahead * (int)blockDim.x) < n))) asm volatile("prefetch.global.L2 [%0];" :: "l"(&x[i + kp_ahead * (int)blockDim.x]));
  float kp_v = (i < n) ? x[i] : 0.0f;
  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
  __shared__ float kp_warp[32];
  if ((threadIdx.x & 31u) == 0) kp_warp[threadIdx.x >> 5] = kp_v;
  __syncthreads();
  if (threadIdx.x < 32u) {
    kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : (float)0;
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
    if (threadIdx.x == 0) sdata[0] = kp_v;
  }
  __syncthreads();
  if (tid == 0) partial[blockIdx.x] = sdata[0];
}
