// Block sums as a template: interleaved addressing with a bit mask instead of %, long global index.
// class: scalar-reduction
// torch: partial = x.view(-1, BS).sum(dim=1)
// kernelpro: let N = 1 << 24
// kernelpro: let BS = 256
// kernelpro: instantiate = block_reduce<float, 256>
// kernelpro: grid = N / BS
// kernelpro: block = BS
// kernelpro: partial = out float[N / BS]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-5
template <typename T, int THREADS>
__global__ void block_reduce(T* partial, const T* x, long n) {
  __shared__ T buf[THREADS];
  long g = (long)blockIdx.x * THREADS + threadIdx.x;
  // Warp shuffles, one shared slot per warp, the first warp finishes (kernelpro ShuffleTree).
  T kp_v = g < n ? x[g] : T(0);
  #pragma unroll
  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
  __shared__ T kp_warp[32];
  if ((threadIdx.x & 31u) == 0) kp_warp[threadIdx.x >> 5] = kp_v;
  __syncthreads();
  if (threadIdx.x < 32u) {
    kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : (T)0;
    #pragma unroll
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
    if (threadIdx.x == 0) buf[0] = kp_v;
  }
  __syncthreads();
  if (threadIdx.x == 0) partial[blockIdx.x] = buf[0];
}
