// A bandwidth-bound copy: 256 MiB read + 256 MiB written, for the harness-vs-torch check.
// kernelpro: let N = 1 << 26
// kernelpro: grid = ceil_div(N / 4, 256)
// kernelpro: block = 256
// kernelpro: dst = out float[N]
// kernelpro: src = in float[N]
// kernelpro: n = N
__global__ void copy4(float4* __restrict__ dst, const float4* __restrict__ src, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 4) dst[i] = src[i];
}
