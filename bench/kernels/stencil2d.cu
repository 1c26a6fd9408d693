// 5-point stencil with double literals.
// kernelpro: let W = 4096
// kernelpro: grid = (W / 32, W / 8)
// kernelpro: block = (32, 8)
// kernelpro: out = out float[W * W]
// kernelpro: in = in float[W * W]
// kernelpro: w = W
__global__ void stencil(float* out, float* in, int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= w) return;
  if (x == 0 || y == 0 || x == w - 1 || y == w - 1) { out[y * w + x] = in[y * w + x]; return; }
  out[y * w + x] = 0.5 * in[y * w + x] + 0.125 * (in[y * w + x - 1] + in[y * w + x + 1] + in[(y - 1) * w + x] + in[(y + 1) * w + x]);
}
