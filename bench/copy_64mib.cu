// A bandwidth-bound copy: 64 MiB read + 64 MiB written: the bandwidth reference for the suite kernels, whose buffers are 64 MiB.
// kernelpro: let N = 1 << 24
// kernelpro: grid = ceil_div(N / 4, 256)
// kernelpro: block = 256
// kernelpro: dst = out float[N]
// kernelpro: src = in float[N]
// kernelpro: n = N
__global__ void copy4(float4* __restrict__ dst, const float4* __restrict__ src, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 4) dst[i] = src[i];
}
