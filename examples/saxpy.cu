// The bundled example: two kernels with well-known, planted problems.
// Try `kernelpro check examples/saxpy.cu`, or open it in your editor.

// kernelpro: let N = 1 << 24
// kernelpro: tune B in [256, 128, 512]
// kernelpro: grid = ceil_div(N, B)
// kernelpro: block = B
// kernelpro: y = inout float[N]
// kernelpro: x = in float[N] uniform(-2, 2)
// kernelpro: a = 2.0
// kernelpro: n = N
__global__ void saxpy(float* y, float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i] * 0.5;  // 0.5 is a double: FP64 math
}

// kernelpro: let W = 2048
// kernelpro: grid = (W / 32, W / 32)
// kernelpro: block = (32, 32)
// kernelpro: out = out float[W * W]
// kernelpro: in = in float[W * W]
// kernelpro: n = W
__global__ void transpose(float* out, const float* in, int n) {
  __shared__ float tile[32][32];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  out[y * n + x] = tile[threadIdx.x][threadIdx.y];  // column read: 32-way bank conflicts
}
