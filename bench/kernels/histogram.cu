// 256-bin histogram with one global atomic per element.
// kernelpro: let N = 1 << 24
// kernelpro: tune B in [256, 128, 512]
// kernelpro: grid = ceil_div(N, B)
// kernelpro: block = B
// kernelpro: bins = inout unsigned[256] zeros
// kernelpro: data = in uint8[N] randint(0, 255)
// kernelpro: n = N
__global__ void histogram(unsigned* bins, unsigned char* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[data[i]], 1u);
}
