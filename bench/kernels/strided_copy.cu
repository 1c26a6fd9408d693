// Copy of a W x W matrix where threadIdx.x walks rows: every warp access is strided.
// kernelpro: let W = 4096
// kernelpro: grid = (W / 32, W / 32)
// kernelpro: block = (32, 32)
// kernelpro: out = out float[W * W]
// kernelpro: in = in float[W * W]
// kernelpro: w = W
__global__ void strided_copy(float* out, float* in, int w) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  int c = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < w && c < w) out[r * w + c] = in[r * w + c];
}
