// Block sums with interleaved addressing and a strided shared index (2 * s * tid): no modulo, but bank conflicts.
// class: scalar-reduction
// torch: partial = x.view(-1, BS).sum(dim=1)
#define BLOCK 256
// kernelpro: let N = 1 << 24
// kernelpro: let BS = 256
// kernelpro: grid = N / BS
// kernelpro: block = BS
// kernelpro: partial = out float[N / BS]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-5
__global__ void block_sum_strided(float* __restrict__ partial, const float* __restrict__ x, int n) {
  __shared__ float cache[BLOCK];
  int tid = threadIdx.x;
  int gid = blockIdx.x * BLOCK + tid;
  // Warp shuffles, one shared slot per warp, the first warp finishes (kernelpro ShuffleTree).
  float kp_v = gid < n ? x[gid] : 0.f;
  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
  __shared__ float kp_warp[32];
  if ((threadIdx.x & 31u) == 0) kp_warp[threadIdx.x >> 5] = kp_v;
  __syncthreads();
  if (threadIdx.x < 32u) {
    kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : (float)0;
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
    if (threadIdx.x == 0) cache[0] = kp_v;
  }
  __syncthreads();
  if (tid == 0) partial[blockIdx.x] = cache[0];
}
