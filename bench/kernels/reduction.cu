// Block sums by a shared-memory tree, then one atomic per block.
// kernelpro: let N = 1 << 24
// kernelpro: grid = N / 256
// kernelpro: block = 256
// kernelpro: total = inout float[1] zeros
// kernelpro: x = in float[N] uniform(0, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-3 atol=1e-2
__global__ void reduce_sum(float* total, float* x, int n) {
  __shared__ float sdata[256];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) atomicAdd(total, sdata[0]);
}
