// Transpose through a shared tile read by columns: 32-way bank conflicts.
// kernelpro: let W = 4096
// kernelpro: grid = (W / 32, W / 32)
// kernelpro: block = (32, 32)
// kernelpro: out = out float[W * W]
// kernelpro: in = in float[W * W]
// kernelpro: n = W
__global__ void transpose(float* out, float* in, int n) {
  __shared__ float tile[32][32];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}
