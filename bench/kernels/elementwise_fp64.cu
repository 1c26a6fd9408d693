// Elementwise with accidental FP64: a double literal and sqrt() on a float.
// kernelpro: let N = 1 << 24
// kernelpro: tune B in [256, 128, 512]
// kernelpro: grid = ceil_div(N, B)
// kernelpro: block = B
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(0, 4)
// kernelpro: a = 1.5
// kernelpro: n = N
__global__ void elementwise(float* y, float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + sqrt(x[i]) * 0.5;
}
